#!/usr/bin/env node
/**
 * Process entry.
 *   switchyard [serve] [--config path]   start the gateway (PORT, HOST env vars; default 127.0.0.1:8080)
 *   switchyard hash-key [key]            print the SHA-256 to put in keys[].key_sha256 (reads one stdin line without an argument, no echo)
 *   switchyard check-config [--config]   validate a config file and exit
 *   switchyard simulate [--port 9100] [--accounts 4] [--config] [--throttle] [--seed N] [--chunk-delay-ms N]
 *                                        serve simulated provider accounts (src/providers/simulator/server.ts)
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { hashKey } from './auth/keys.js';
import { readKeyLine } from './auth/read-key.js';
import { workersStoreProblem } from './config/checks.js';
import { ConfigError, loadConfig, type GatewayConfig } from './config/load.js';
import { PROVIDERS } from './providers/registry.js';
import { runSimulate } from './providers/simulator/cli.js';
import { buildAdmin } from './server/admin/api.js';
import { runPrimary } from './server/cluster/primary.js';
import { joinPrimary, type WorkerLink } from './server/cluster/worker.js';
import { createLogger } from './server/logger.js';
import { logStartup } from './server/lifecycle/startup-log.js';
import { packageRoot } from './util/package-root.js';
import { packageVersion } from './util/version.js';

const USAGE = `usage:
  switchyard [serve] [--config <file>]   start the gateway (env: PORT=8080, HOST=127.0.0.1, SWITCHYARD_CONFIG); SIGHUP reloads the config
  switchyard hash-key                    print the SHA-256 of the key typed (no echo) or piped (first line) for keys[].key_sha256
  switchyard hash-key <key>              the same for a key given as an argument (it stays in the shell history)
  switchyard check-config [--config <file> | <file>]   validate a config file, print its warnings
  switchyard --version | --help
  switchyard simulate [--port 9100] [--accounts 4] [--config <file>] [--throttle] [--seed <n>] [--chunk-delay-ms <n>]
                                         simulated provider accounts on /acct-<n>/v1 (settings: the config's first simulator upstream)
`;

/**
 * Time allowed on top of `server.drain_ms` for cutting what is left and closing pools and
 * Redis, before close-with-grace gives up (exit 1). 25 s + 4 s stays within Kubernetes' 30 s.
 */
const SHUTDOWN_MARGIN_MS = 4_000;

/** A stop signal repeated within this long (ms) is the same stop (a Ctrl-C npm forwards too). */
const SAME_STOP_MS = 1_000;

function configPath(flag: string | undefined): string {
  if (flag) return resolve(flag);
  if (process.env['SWITCHYARD_CONFIG']) return resolve(process.env['SWITCHYARD_CONFIG']);
  const local = resolve('config/switchyard.yaml');
  return existsSync(local) ? local : join(packageRoot(), 'config', 'switchyard.yaml');
}

/** HOST and PORT. @throws ConfigError when PORT is not a port number. */
function listenAddress(): { host: string; port: number } {
  const host = process.env['HOST'] || '127.0.0.1';
  const text = process.env['PORT'] || '8080';
  // Decimal digits only: Number() would read `0x5A0D` as hex and `1e3` as 1000.
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`PORT must be a port number (decimal, 0-65535), got ${JSON.stringify(process.env['PORT']?.slice(0, 40))}`);
  return { host, port };
}

/**
 * `switchyard serve`: one gateway process, or (`server.workers` > 1) the primary that runs
 * that many (server/cluster/primary.ts), or one of them.
 * @returns the exit code when the primary is done, -1 while a gateway serves.
 */
async function serveCommand(path: string): Promise<number> {
  const config = loadConfig(path, { kinds: PROVIDERS });
  const link = joinPrimary();
  if (link) await serve(path, config, link);
  else if (config.server.workers > 1) {
    const problem = workersStoreProblem(config.server.workers, config.store, process.env);
    if (problem) throw new ConfigError(`${config.path}: ${problem}`);
    listenAddress();
    const logger = createLogger(config.server.log_level);
    return runPrimary({ workers: config.server.workers, stopMs: config.server.drain_ms + SHUTDOWN_MARGIN_MS, logger });
  } else await serve(path, config);
  return -1;
}

async function serve(path: string, config: GatewayConfig, link: WorkerLink | null = null): Promise<void> {
  const gateway = await buildApp(config, link ? { worker: link } : {});
  const { app, logger } = gateway;
  const { host, port } = listenAddress();
  let address: string;
  try {
    address = await app.listen({ host, port });
  } catch (err) {
    await app.close();
    throw new ConfigError(`cannot listen on ${host}:${port}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  // The admin API on its own listener, only when an admin key is configured.
  let admin: Awaited<ReturnType<typeof buildAdmin>> | null = null;
  if (config.admin.key_sha256) {
    // A worker's admin API reloads every worker (the admin port is shared like the client port).
    const reloadAll = (p?: string) => {
      const summary = gateway.reload(p);
      link?.reloadOthers();
      return summary;
    };
    admin = await buildAdmin(link ? { ...gateway, reload: reloadAll } : gateway);
    try {
      const adminAddress = await admin.listen({ host: config.admin.host, port: config.admin.port });
      logger.info({ address: adminAddress }, `admin API listening on ${adminAddress}`);
    } catch (err) {
      await Promise.allSettled([admin.close(), app.close()]);
      throw new ConfigError(
        `cannot listen on ${config.admin.host}:${config.admin.port} (admin): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  } else {
    logger.info('admin API disabled: set admin.key_sha256 in the config to enable it');
  }
  // SIGHUP reloads the config file (reload logs the outcome; a bad file leaves the running config).
  const reload = (): void => {
    if (gateway.drain.draining) {
      logger.info('SIGHUP ignored: shutting down');
      return;
    }
    try {
      gateway.reload(path);
    } catch {
      // already logged
    }
  };
  process.on('SIGHUP', reload);
  // Installed only once listening: its exit hook would turn a failed start into exit 0.
  // SIGTERM / SIGINT: /readyz fails and new requests get 503 at once; requests in flight get
  // server.drain_ms to finish, then are cut (src/server/lifecycle/drain.ts); then pools and Redis close
  // and the process exits 0. The hard limit past that exits 1; a second signal exits 1 at once,
  // unless it is the same signal within SAME_STOP_MS: under `npm start` (whose script execs
  // node, so npm's SIGTERM reaches it) a Ctrl-C comes twice, from the terminal and from npm.
  // A worker drains once on SIGTERM / SIGINT or the primary's shutdown message, whichever
  // comes first (both come on Ctrl-C); the primary's force message exits 1.
  const drainMs = config.server.drain_ms;
  let stopSignal: string | undefined;
  let stopAt = 0;
  const grace = closeWithGrace({ delay: drainMs + SHUTDOWN_MARGIN_MS, skip: ['SIGHUP', 'SIGTERM', 'SIGINT'] }, async ({ signal = stopSignal, err }) => {
    if (err) app.log.error({ err }, 'fatal error, closing');
    else app.log.info({ signal, drain_ms: drainMs, in_flight: gateway.drain.inFlight }, 'shutting down: draining requests in flight');
    // After a fatal error nothing waits: calls in flight are cut at once. The admin API (and
    // its console) stays up while the client port drains, so the drain can be watched.
    const [drained] = await Promise.allSettled([gateway.drain.shutdown(err ? 0 : drainMs)]);
    await admin?.close().catch(() => {});
    if (drained.status === 'fulfilled') app.log.info({ drain: drained.value }, 'closed');
    logger.flush();
    // close-with-grace exits 1 on a throw.
    if (drained.status === 'rejected') {
      app.log.error({ err: drained.reason }, 'closing failed');
      throw drained.reason;
    }
  });
  logStartup(logger, config, host, address);
  const shutdown = (signal: string): void => {
    if (stopSignal === undefined) {
      stopSignal = signal;
      stopAt = Date.now();
      grace.close();
      return;
    }
    if (link || (signal === stopSignal && Date.now() - stopAt < SAME_STOP_MS)) return;
    app.log.error({ signal }, `second ${signal}, exiting`);
    logger.flush();
    process.exit(1);
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  if (link) {
    link.attach({ registry: gateway.metrics.registry, reload, shutdown });
    link.ready();
  }
}

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  // simulate
  port: { type: 'string' },
  accounts: { type: 'string' },
  throttle: { type: 'boolean' },
  seed: { type: 'string' },
  'chunk-delay-ms': { type: 'string' },
} as const;

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (err) {
    // Node's message names the option; its advice about "--" is for positionals, not ours.
    const message = (err as Error).message.split('. ')[0]!.replace(/\.$/, '');
    process.stderr.write(`switchyard: ${message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const command = positionals[0] ?? 'serve';
  if (values.help || command === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (values.version || command === 'version') {
    process.stdout.write(`switchyard ${packageVersion()}\n`);
    return 0;
  }
  // `switchyard check-config my.yaml` and `switchyard serve my.yaml` take the file as well as --config.
  const file = values.config ?? (command === 'serve' || command === 'check-config' ? positionals[1] : undefined);
  const extra = positionals.slice(command === 'hash-key' || file === positionals[1] ? 2 : 1);
  if (extra.length > 0 && ['serve', 'check-config', 'simulate', 'hash-key'].includes(command)) {
    process.stderr.write(`switchyard ${command}: unexpected argument "${extra[0]!.slice(0, 80)}"\n${USAGE}`);
    return 2;
  }
  const simulateOnly = (['port', 'accounts', 'throttle', 'seed', 'chunk-delay-ms'] as const).filter((f) => values[f] !== undefined);
  if (command !== 'simulate' && simulateOnly.length > 0) {
    process.stderr.write(`switchyard ${command}: --${simulateOnly[0]} is an option of "simulate" only (the gateway listens on PORT / HOST)\n${USAGE}`);
    return 2;
  }
  switch (command) {
    case 'serve':
      return serveCommand(configPath(file));
    case 'hash-key': {
      const key = positionals[1] ?? (await readKeyLine(process.stdin, process.stderr));
      if (!key) {
        process.stderr.write('hash-key: no key given\n');
        return 2;
      }
      process.stdout.write(`${hashKey(key)}\n`);
      return 0;
    }
    case 'check-config': {
      const config = loadConfig(configPath(file), { kinds: PROVIDERS });
      const simulated = config.upstreamStatus.filter((u) => u.mode === 'simulated').length;
      const live = config.upstreamStatus.filter((u) => u.mode === 'live').length;
      process.stdout.write(
        `${config.path}: ok (${config.models.size} models; upstreams: ${live} live, ${simulated} simulated, ${config.upstreamStatus.length - live - simulated} off)\n`,
      );
      for (const w of config.warnings) process.stdout.write(`warning: ${w}\n`);
      return 0;
    }
    case 'simulate':
      await runSimulate(configPath(values.config), values);
      return -1;
    default:
      process.stderr.write(`switchyard: unknown command "${command.slice(0, 80)}"\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError) process.stderr.write(`switchyard: ${err.message}\n`);
    else process.stderr.write(`switchyard: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);

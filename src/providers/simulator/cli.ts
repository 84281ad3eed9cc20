/**
 * `switchyard simulate`: runs the standalone simulator server (server.ts) until SIGINT or
 * SIGTERM. Settings come from the first `simulator` upstream of the config file; the flags
 * override them.
 */
import { ConfigError, loadConfig } from '../../config/load.js';
import { PROVIDERS } from '../registry.js';
import type { SimulatorConfig } from '../../config/schema.js';
import { startSimulatorServer } from './server.js';

export interface SimulateFlags {
  port?: string | undefined;
  accounts?: string | undefined;
  throttle?: boolean | undefined;
  seed?: string | undefined;
  'chunk-delay-ms'?: string | undefined;
}

function int(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  // Decimal digits only: Number() reads `0x5A0D` as hex.
  const n = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return n;
}

/** The simulator settings: the config's first `simulator` upstream, then the flags. */
export function simulatorSettings(configPath: string, flags: SimulateFlags): SimulatorConfig {
  const config = loadConfig(configPath, { kinds: PROVIDERS });
  const upstream = [...config.upstreams.values()].find((u) => u.provider === 'simulator');
  if (!upstream) throw new ConfigError(`${config.path}: no upstream with provider: simulator to take the simulator settings from`);
  const base = upstream.simulator;
  return {
    ...base,
    chunk_delay_ms: int('chunk-delay-ms', flags['chunk-delay-ms'], base.chunk_delay_ms, 0, 10_000),
    seed: int('seed', flags.seed, base.seed, 0, 4_294_967_295),
    throttle: { ...base.throttle, enabled: flags.throttle === true || base.throttle.enabled },
  };
}

/** Starts the server and resolves once it listens; it runs until a signal stops it. */
export async function runSimulate(configPath: string, flags: SimulateFlags): Promise<void> {
  const simulator = simulatorSettings(configPath, flags);
  const accounts = int('accounts', flags.accounts, 4, 1, 1000);
  const port = int('port', flags.port, 9100, 0, 65535);
  const server = await startSimulatorServer({ simulator, accounts, port, host: process.env['HOST'] || '127.0.0.1' });
  const t = simulator.throttle;
  process.stdout.write(
    `simulator: ${accounts} accounts on ${server.url} (POST /acct-1..${accounts}/v1/chat/completions, GET /stats, POST /reset)\n` +
      `simulator: chunk_delay_ms=${simulator.chunk_delay_ms} first_byte_delay_ms=${simulator.first_byte_delay_ms} seed=${simulator.seed} ` +
      (t.enabled
        ? `throttle on: window_ms=${t.window_ms} deep_threshold=${t.deep_threshold} deep_efforts=${t.deep_efforts.join(',')} reject_share=${t.reject_share} ` +
          `retry_after_s=${t.retry_after_s} stall_first_token_ms=${t.stall_first_token_ms} stall_pause_ms=${t.stall_pause_ms} stall_pause_every=${t.stall_pause_every}\n`
        : 'throttle off\n'),
  );
  const stop = (): void => {
    void server.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

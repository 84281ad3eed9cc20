/**
 * The start-up report: which upstreams are live, simulated or off, which models are
 * served, and a warning when the public demo key is accepted on a non-loopback address.
 */
import type { Logger } from 'pino';
import { KeyStore } from '../../auth/keys.js';
import type { GatewayConfig } from '../../config/types.js';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/i;

export function logStartup(log: Logger, config: GatewayConfig, host: string, address: string): void {
  for (const u of config.upstreamStatus) {
    const line = { upstream: u.id, provider: u.provider, mode: u.mode, ...(u.reason ? { reason: u.reason } : {}) };
    log.info(line, u.mode === 'off' ? `upstream ${u.id} is off` : `upstream ${u.id} is ${u.mode}`);
  }
  for (const m of config.models.values()) {
    log.info({ model: m.name, targets: m.targets.map((t) => `${t.upstream.id}/${t.model}`) }, `model ${m.name} served`);
  }
  for (const w of config.warnings) log.warn(w);
  if (new KeyStore(config.keys).acceptsDemoKey() && !LOOPBACK.test(host)) {
    log.warn({ host }, 'the public demo key sk-switchyard-demo is accepted on a non-loopback address; remove it from keys before exposing this gateway');
  }
  log.info({ address, config: config.path }, `switchyard listening on ${address}`);
}

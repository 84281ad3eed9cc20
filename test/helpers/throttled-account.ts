/**
 * The benchmark's throttling provider (scripts/bench/throttled-provider.mjs) for tests of
 * learned capacity, and the config they run it with: one reasoning model on one account,
 * nothing about the account's limit, so the gateway must learn it.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashKey } from '../../src/auth/keys.js';
import { CLIENT_KEY } from './gateway.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The provider's handle (see scripts/bench/throttled-provider.mjs). */
export interface ThrottledProvider {
  url: string;
  accountUrl(i: number): string;
  stats(): Record<string, { requests: number; throttled: number; served: number; peak_in_flight: number; in_flight: number; cap: number }>;
  setCap(account: string, cap: number): void;
  reset(): void;
  close(): Promise<void>;
}

/** Starts the throttling provider with its own flags (`accounts`, `cap`, `shape`, timings). */
export async function startThrottledProvider(o: Record<string, unknown>): Promise<ThrottledProvider> {
  const mod = (await import(join(ROOT, 'scripts', 'bench', 'throttled-provider.mjs'))) as {
    startThrottledProvider(o: Record<string, unknown>): Promise<ThrottledProvider>;
  };
  return mod.startThrottledProvider(o);
}

/**
 * A config with the reasoning model `deep` (shed policy reject) on the account `acct` at
 * `accountUrl`, and `storeLine` (a `store:` line, or '' for memory) as given.
 */
export function deepAccountConfig(accountUrl: string, storeLine: string): string {
  return `
server: { log_level: warn }
${storeLine}
routing: { max_attempts: 3 }
upstreams:
  - { id: acct, provider: openai-compatible, base_url: "${accountUrl}", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: deep
    reasoning: true
    price: { input: 1, output: 1 }
    shed: { policy: reject }
    targets: [{ upstream: acct, model: deep-model }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

/**
 * The config loader as the gateway calls it, for tests: `parseConfig` / `loadConfig`
 * handed the real provider registry, so a test names only what it is about.
 */
import { loadConfig, parseConfig, type GatewayConfig } from '../../src/config/load.js';
import { PROVIDERS } from '../../src/providers/registry.js';

/**
 * Parses a config document with the gateway's provider kinds.
 * @param env the environment for `${VAR}` references (tests never read `process.env`).
 * @param path shown in errors and kept on the result (`<inline>` when omitted).
 */
export function parseTestConfig(yaml: string, env: NodeJS.ProcessEnv, path?: string): GatewayConfig {
  return parseConfig(yaml, { kinds: PROVIDERS, env, path });
}

/** Loads a config file with the gateway's provider kinds and the given environment. */
export function loadTestConfig(path: string, env: NodeJS.ProcessEnv): GatewayConfig {
  return loadConfig(path, { kinds: PROVIDERS, env });
}

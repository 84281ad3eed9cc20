/**
 * Provider kinds by config name. Adding a provider is one folder under `providers/` and
 * one line here.
 */
import type { ProviderFactory } from './types.js';
import { createOpenAICompatible } from './openai-compatible/index.js';
import { createSimulator } from './simulator/index.js';

export const PROVIDERS: Readonly<Record<string, ProviderFactory>> = {
  'openai-compatible': createOpenAICompatible,
  simulator: createSimulator,
};

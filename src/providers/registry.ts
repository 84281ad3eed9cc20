/**
 * Provider kinds by config name. Adding a provider is one folder under `providers/` and
 * one line here; nothing else in the gateway names a provider.
 */
import type { ProviderKind } from './types.js';
import { anthropicKind } from './anthropic/index.js';
import { azureOpenAIKind } from './azure-openai/index.js';
import { openAICompatibleKind } from './openai-compatible/index.js';
import { simulatorKind } from './simulator/index.js';

export const PROVIDERS: Readonly<Record<string, ProviderKind>> = {
  anthropic: anthropicKind,
  'azure-openai': azureOpenAIKind,
  'openai-compatible': openAICompatibleKind,
  simulator: simulatorKind,
};

/**
 * OpenAI-compatible upstreams (OpenAI, DeepSeek, Groq, Together, OpenRouter, vLLM, Gemini's
 * OpenAI endpoint …): speak the chat wire API (and Responses when `options.responses`; only
 * Responses with `options.chat: false`, which implies it); this
 * adds the provider key and posts to `<base_url>/chat/completions` (OpenAI API reference, "Create chat
 * completion") or, when the upstream serves it (`options.responses: true`), to
 * `<base_url>/responses` (OpenAI API reference, "Create a model response").
 */
import { Type, type Static } from '@sinclair/typebox';
import type { LiveUpstream } from '../../config/types.js';
import type { ApiName, Provider, ProviderKind } from '../types.js';
import { createOpenAIStyle } from './base.js';

export const OpenAICompatibleOptionsSchema = Type.Object(
  {
    /** The upstream serves the Responses API (`POST /responses`): OpenAI does, most others do not. */
    responses: Type.Boolean({ default: false }),
    /** The upstream serves chat completions (`POST /chat/completions`); false for a model served on the Responses API only (OpenAI's Codex models). */
    chat: Type.Boolean({ default: true }),
  },
  { additionalProperties: false, default: {} },
);
type Options = Static<typeof OpenAICompatibleOptionsSchema>;

/**
 * `gen_ai.provider.name` by the API host of vendors that serve the OpenAI API (OpenTelemetry
 * GenAI conventions, the attribute's well-known values); any other host (a proxy, vLLM,
 * a router such as OpenRouter) is reported as `openai`, the API flavour it speaks.
 */
const GEN_AI_PROVIDERS: Readonly<Record<string, string>> = {
  'api.openai.com': 'openai',
  'api.deepseek.com': 'deepseek',
  'api.groq.com': 'groq',
  'api.mistral.ai': 'mistral_ai',
  'api.x.ai': 'x_ai',
  'api.perplexity.ai': 'perplexity',
  'generativelanguage.googleapis.com': 'gcp.gemini',
};

function genAiProviderOf(baseUrl: string): string {
  return GEN_AI_PROVIDERS[new URL(baseUrl).hostname.toLowerCase()] ?? 'openai';
}

const PATHS: Partial<Record<ApiName, string>> = { chat: '/chat/completions', responses: '/responses' };

/** The wire APIs an account speaks: chat unless `chat: false`, Responses with `responses: true` or when it speaks nothing else. */
function wireApisOf(o: Partial<Options>): ReadonlySet<ApiName> {
  const chat = o.chat !== false;
  return new Set<ApiName>([...(chat ? (['chat'] as const) : []), ...(o.responses === true || !chat ? (['responses'] as const) : [])]);
}

export function createOpenAICompatible(upstream: LiveUpstream): Provider {
  const options = upstream.options as Options;
  return createOpenAIStyle(upstream, {
    wireApis: wireApisOf(options),
    authHeaders: upstream.apiKey ? { authorization: `Bearer ${upstream.apiKey}` } : {},
    genAiProvider: genAiProviderOf(upstream.base_url!),
    path: (req) => (req.api === 'responses' && req.operation === 'compact' ? '/responses/compact' : (PATHS[req.api] ?? PATHS.chat!)),
  });
}

/** Registry entry. */
export const openAICompatibleKind: ProviderKind = { create: createOpenAICompatible, options: OpenAICompatibleOptionsSchema, needsBaseUrl: true };

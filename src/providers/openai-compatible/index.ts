/**
 * OpenAI-compatible upstreams (OpenAI, DeepSeek, Groq, Together, OpenRouter, vLLM, Gemini's
 * OpenAI endpoint …): speak the chat wire API (and Responses when `options.responses`); this
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
  },
  { additionalProperties: false, default: {} },
);
type Options = Static<typeof OpenAICompatibleOptionsSchema>;

const PATHS: Partial<Record<ApiName, string>> = { chat: '/chat/completions', responses: '/responses' };

export function createOpenAICompatible(upstream: LiveUpstream): Provider {
  const options = upstream.options as Options;
  return createOpenAIStyle(upstream, {
    wireApis: new Set<ApiName>(options.responses ? ['chat', 'responses'] : ['chat']),
    authHeaders: upstream.apiKey ? { authorization: `Bearer ${upstream.apiKey}` } : {},
    path: (req) => PATHS[req.api] ?? PATHS.chat!,
  });
}

/** Registry entry. */
export const openAICompatibleKind: ProviderKind = { create: createOpenAICompatible, options: OpenAICompatibleOptionsSchema, needsBaseUrl: true };

/**
 * messages -> responses: an Anthropic Messages client (Claude Code, the `@anthropic-ai/sdk`
 * SDKs) served by an account that serves the model on the Responses API only (OpenAI's Codex
 * models; `openai-compatible` with `options: { chat: false }`). The request is translated by
 * `request.ts`, a JSON answer by `response.ts`, a stream event by event by `stream.ts`;
 * reading the account's answer is shared with chat -> responses (`responses-wire.ts`).
 *
 * Errors are read in OpenAI's shape (an HTTP error body, an `error` event, a
 * `response.failed` event's `response.error`; recording
 * `openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl`) and reach the
 * client in Anthropic's (the Messages API's `errorBody` / `sseErrorFrame`, by status), so the
 * SDK raises the class it would against Anthropic. A stream that ends before
 * `response.completed` / `response.incomplete` is cut short.
 */
import type { Translator, TranslatorContext } from '../types.js';
import { responsesWireTranslator } from '../responses-wire.js';
import { toResponsesRequest } from './request.js';
import { toMessage } from './response.js';
import { ResponsesToMessagesStream } from './stream.js';

export function messagesToResponses(ctx: TranslatorContext): Translator {
  return responsesWireTranslator(ctx, {
    client: 'messages',
    request: toResponsesRequest,
    answer: toMessage,
    stream: new ResponsesToMessagesStream(ctx.promptTokens),
  });
}

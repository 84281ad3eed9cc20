/**
 * chat -> responses: an OpenAI Chat Completions client served by an account that serves the
 * model on the Responses API only (OpenAI's Codex models; an `openai-compatible` upstream with
 * `options: { responses: true, chat: false }`). The request is translated by `request.ts`, a
 * JSON answer by `response.ts`, a stream event by event by `stream.ts`; reading the account's
 * answer and errors is shared with every client over the Responses wire (`responses-wire.ts`).
 * Errors need no mapping: both APIs use OpenAI's error object.
 */
import type { Translator, TranslatorContext } from '../types.js';
import { responsesWireTranslator } from '../responses-wire.js';
import { toResponsesRequest } from './request.js';
import { toChatCompletion } from './response.js';
import { ResponsesToChatStream } from './stream.js';

export function chatToResponses(ctx: TranslatorContext): Translator {
  return responsesWireTranslator(ctx, {
    client: 'chat',
    request: toResponsesRequest,
    answer: toChatCompletion,
    stream: new ResponsesToChatStream(ctx.wantsUsage),
  });
}

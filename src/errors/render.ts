/**
 * Renders errors in OpenAI's dialect: `{"error":{"message","type","param","code"}}`
 * (the `ErrorResponse` schema of OpenAI's OpenAPI spec), as a JSON body or as the final
 * SSE event of a broken stream. The `openai` SDKs raise `APIError` on either form.
 */
import { GatewayError } from './codes.js';

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** Builds the OpenAI-style error object for a gateway error. */
export function errorBody(err: GatewayError): OpenAIErrorBody {
  return { error: { message: err.message, type: err.type, param: err.param, code: err.openaiCode } };
}

/** One SSE event `data: {"error":{…}}\n\n` ending a stream that already started. */
export function sseErrorFrame(body: OpenAIErrorBody): Buffer {
  return Buffer.from(`data: ${JSON.stringify(body)}\n\n`);
}

/**
 * Context windows (issue 32): a request whose estimated size passes its model's
 * `context_window` goes to the model's `context_fallback` (a larger window), or is answered
 * with a 400 naming the window and the estimate, before any upstream is called. An upstream's
 * own "too long" 400 would come after a slot was taken and an attempt made on an account; this
 * refusal touches no account's health, cooldown or learned capacity.
 *
 * What counts against the window, tokens: the prompt (usage/estimate.ts `countPromptTokens`,
 * o200k_base on its texts with fixed estimates for images and files; bounded work, ~30 ms
 * whatever the size, yielding to the event loop) plus the request's output cap
 * (`max_tokens`, `max_completion_tokens`, `max_output_tokens`), as both providers define the window:
 * - OpenAI: a model's context window holds its input and output tokens together (model pages,
 *   platform.openai.com/docs/models: "context window" beside "max output tokens"); a request
 *   past it is refused with `context_length_exceeded`, "This model's maximum context length is
 *   N tokens. However, you requested M tokens (P in the messages, C in the completion)".
 * - Anthropic: the window holds the whole conversation and the response; on its newer models
 *   the input plus `max_tokens` must fit in it, or the request is refused up front
 *   (platform.claude.com, "Context windows"; the 400 reads "input length and `max_tokens`
 *   exceed context limit"); a prompt alone past it is a 400 `invalid_request_error` "prompt is
 *   too long: N tokens > M maximum".
 *
 * A Responses follow-up (`previous_response_id`) is counted with the conversation the gateway
 * journalled for it (pipeline/continuation.ts); a history only the upstream holds is not seen.
 *
 * The estimate is o200k_base's; other providers' tokenizers count the same text differently,
 * so a window is best declared a little under the provider's own.
 */
import type { Model } from '../config/types.js';
import { GatewayError } from '../errors/codes.js';
import { countPromptTokens } from '../usage/estimate.js';
import type { Call } from './call.js';
import { promptBytes } from './select.js';

/** Where a request goes for its size: its own model, or the context fallback that can hold it. */
export interface ContextFit {
  /** The model routing begins with. */
  readonly model: Model;
  /** Set when the request moved to a context fallback: the model it came from. */
  readonly from?: Model;
  /** Estimated prompt plus output cap, tokens; undefined when nothing was counted. */
  readonly needed?: number;
}

/**
 * The body's size, bytes, when it bounds the prompt's tokens: its `Content-Length`, unless it
 * was compressed (the decoded body is larger) or sent chunked (unknown), and unless it holds
 * images (an image sent by URL is a few bytes, counted at a fixed ~1,600 tokens:
 * usage/prompt-parts.ts). o200k_base never makes a token of less than one byte of text, and
 * JSON only adds bytes around it, so N bytes hold at most about N tokens (and as a rule ~N/4).
 */
function boundingBytes(call: Call): number | undefined {
  const { req, api, body } = call;
  if (req.headers['content-encoding'] !== undefined || api.hasImages(body)) return undefined;
  return promptBytes(req);
}

/**
 * Checks the request against `model`'s context window and finds the model to route to.
 * Counts only when the model declares a window and the body is big enough to pass it: a body
 * of N bytes (see {@link boundingBytes}) with output cap C never needs more than N + C tokens.
 * The count is kept on the call for later use (pipeline/attempt.ts).
 * @param model the requested model as this API reaches it.
 * @param lookup a model by name as this request may use it (API, images, continuation), or undefined.
 * @param declared a configured model by name (its window and next context fallback).
 * @throws GatewayError 400 `context_length_exceeded` when the estimate passes the window and
 *   no context fallback this request can use holds it.
 */
export async function fitContext(
  call: Call,
  model: Model,
  lookup: (name: string) => Model | undefined,
  declared: (name: string) => Model | undefined,
): Promise<ContextFit> {
  const window = model.contextWindow;
  if (window === undefined) return { model };
  const { api, body } = call;
  const output = Math.max(0, api.maxOutputTokens(body) ?? 0);
  const continuation = call.continuation;
  const bytes = continuation ? undefined : boundingBytes(call);
  if (bytes !== undefined && bytes + output <= window) return { model };
  const counting = countPromptTokens(api.prompt(continuation ? { ...body, input: continuation.expandedInput(body) } : body));
  if (!continuation) call.promptTokens ??= counting.catch(() => 0);
  const prompt = await counting;
  const needed = prompt + output;
  if (needed <= window) return { model, needed };
  // The context fallbacks, each larger than the last (checked at load), until one holds it.
  const seen = new Set<string>([model.name]);
  for (let name = model.contextFallback; name !== undefined && !seen.has(name); name = declared(name)?.contextFallback) {
    seen.add(name);
    const to = lookup(name);
    if (to && (to.contextWindow === undefined || needed <= to.contextWindow)) return { model: to, from: model, needed };
  }
  throw tooLong(call, model, prompt, output);
}

/** Whether `model` can take a request of `needed` tokens (unknown on either side: yes); for fallback and shed moves. */
export function holds(model: Model, needed: number | undefined): boolean {
  return needed === undefined || model.contextWindow === undefined || needed <= model.contextWindow;
}

/**
 * The 400 in the client API's words, so a client that recognises its provider's answer (an
 * agent that compacts on it) does here too: Messages clients get Anthropic's "prompt is too
 * long: N tokens > M maximum", chat and Responses clients OpenAI's "maximum context length"
 * wording with code `context_length_exceeded`. Both name the model, the window, the estimate
 * and what to do.
 */
function tooLong(call: Call, model: Model, prompt: number, output: number): GatewayError {
  const window = model.contextWindow!;
  const needed = prompt + output;
  const what = output > 0 ? `about ${needed} tokens (${prompt} in the prompt, ${output} requested for the output)` : `about ${needed} tokens in the prompt`;
  const advice = `Compact or shorten the conversation${output > 0 ? ', or lower the output limit,' : ''} and retry.`;
  const estimate = `the gateway's estimate for model \`${model.name}\`, whose context window is ${window} tokens`;
  if (call.api.name === 'messages') {
    const message = `prompt is too long: ${needed} tokens > ${window} maximum (${estimate}; ${prompt} prompt tokens plus max_tokens ${output}). ${advice}`;
    return new GatewayError('GW_ERR_CONTEXT_WINDOW', { message });
  }
  const message = `This model's maximum context length is ${window} tokens. However, this request needs ${what} (${estimate}). ${advice}`;
  return new GatewayError('GW_ERR_CONTEXT_WINDOW', { message, param: call.api.name === 'responses' ? 'input' : 'messages' });
}

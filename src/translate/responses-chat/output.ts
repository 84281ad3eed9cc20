/**
 * What a chat-completions answer's end means for the response (the objects themselves are
 * built by `../responses-output.ts`, shared with the other translators for a Responses
 * client):
 * - `finish_reason` `length` -> status `incomplete`, `incomplete_details.reason`
 *   `max_output_tokens`; `content_filter` -> `incomplete` / `content_filter`;
 * - chat `reasoning_content` (DeepSeek) / `reasoning` (OpenRouter, vLLM) is the model's raw
 *   reasoning: a `reasoning` item with `content: [{type:'reasoning_text'}]` and an empty
 *   `summary` (as OpenAI's open-weight models answer on the Responses API); no summary and
 *   no `encrypted_content` are invented.
 */
import { COMPLETED, type Ending, incomplete } from '../responses-output.js';

/** Chat `finish_reason` -> the response's status and `incomplete_details`. */
export function statusOf(finish: string | null): Ending {
  if (finish === 'length') return incomplete('max_output_tokens');
  if (finish === 'content_filter') return incomplete('content_filter');
  return COMPLETED;
}

/**
 * A Responses warmup: `response.create` with `generate: false` (OpenAI guide "WebSocket
 * mode": it prepares request state, returns a response id later turns chain from with
 * `previous_response_id`, and generates nothing). Codex sends one as the first frame of
 * every WebSocket session (observed with codex-cli 0.171.0, `request_kind: "prewarm"`).
 *
 * The gateway answers it itself, after the key's limits admitted it like any call: no
 * upstream is called (a chat-completions account has no such mode and would generate an
 * answer, and no account could be pinned to state the gateway reaches over HTTP). The
 * conversation is journalled under a new id with no owner (pipeline/continuation.ts), so
 * the follow-up is rebuilt from it for whichever account serves it. The answer is a
 * `completed` response with no output and zero usage: `response.created` then
 * `response.completed` when streamed (always, over the WebSocket), else the JSON object.
 */
import { randomBytes } from 'node:crypto';
import type { Model } from '../config/types.js';
import type { ResponseJournal } from '../store/roles.js';
import type { Call } from './call.js';
import { inputItems, recordWarmup } from './continuation.js';
import { sessionOfResponse } from './session.js';
import type { Ending } from './outcome.js';
import { SSE_HEADERS } from './relay-sse.js';

/** Whether the call is a Responses warmup (`generate: false`). */
export function isWarmup(call: Call): boolean {
  return call.api.name === 'responses' && call.body['generate'] === false;
}

const NO_TOKENS = {
  input_tokens: 0,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 0,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 0,
};

/** One SSE event of the Responses stream (`event:` line and JSON data). */
function sse(type: string, seq: number, response: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq, response })}\n\n`;
}

/**
 * Answers a warmup of `model` (the call already admitted) and journals it in `journal`, in
 * `session` (the request's session, pipeline/session.ts) when it has one.
 * @returns the call's ending: 200 `ok`, no attempt, zero usage (nothing is charged).
 */
export function answerWarmup(call: Call, model: Model, journal: ResponseJournal, session: string | undefined): Ending {
  const { body, req, reply } = call;
  const id = `resp_${randomBytes(24).toString('hex')}`;
  const input = call.continuation ? call.continuation.expandedInput(body) : inputItems(body['input']);
  recordWarmup(journal, call.gen.config.store.journal_ttl_ms, { id, input, key: req.caller?.name ?? null, session: sessionOfResponse(req, session, id) });
  const previous = typeof body['previous_response_id'] === 'string' ? body['previous_response_id'] : null;
  const response = (status: string, usage: unknown): Record<string, unknown> => ({
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: null,
    model: body.model,
    output: [],
    previous_response_id: previous,
    usage,
  });
  const headers = { ...call.limitHeaders, 'x-request-id': req.id, 'x-switchyard-warmup': 'true' };
  let ttftMs: number | null = null;
  if (call.stream) {
    reply.hijack();
    reply.raw.writeHead(200, { ...SSE_HEADERS, ...headers });
    ttftMs = Date.now() - req.startedAt;
    reply.raw.end(sse('response.created', 0, response('in_progress', null)) + sse('response.completed', 1, response('completed', NO_TOKENS)));
  } else {
    void reply.code(200).headers(headers).send(response('completed', NO_TOKENS));
  }
  return {
    status: 200,
    outcome: 'ok',
    errorClass: null,
    model: model.name,
    served: null,
    usage: null,
    estimated: false,
    ttftMs,
    attempts: 0,
    fallback: null,
    shed: null,
    price: model.price,
    provider: null,
  };
}

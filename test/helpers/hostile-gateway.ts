/**
 * The gateway of the hostile-input property tests (test/hostile): three models, one per
 * wire API (`m-chat` on a chat account, `m-resp` on a Responses-only account, `m-anth` on an
 * Anthropic account), all on one fake upstream answering every call validly from the
 * recordings, so every (client API, wire API) pair is crossed and any 5xx is the gateway's.
 */
import { hashKey } from '../../src/auth/keys.js';
import type { ReceivedRequest, ScriptedReply } from './fake-upstream.js';
import { CLIENT_KEY } from './gateway.js';
import { anthropicEvents, fixtureJson, replay, sseEvents } from './recordings.js';

type Obj = Record<string, unknown>;

/** The accounts' key: never in what a client is sent. */
export const UPSTREAM_SECRET = 'sk-hostile-upstream-secret-0123456789';

const SSE = { 'content-type': 'text/event-stream; charset=utf-8' };
const RESPONSES_STREAM = sseEvents('openai-responses-stream-text.sse');
const RESPONSES_JSON = (JSON.parse(RESPONSES_STREAM.find((e) => e.startsWith('event: response.completed'))!.split('data: ')[1]!) as Obj)['response'];
const MESSAGES_STREAM = anthropicEvents('anthropic-messages-stream-text.chunks.jsonl');
const chatStream = replay('openai-chat-stream-text-include-usage.sse');

/** A healthy account of each wire API, told apart by the base URL's first path segment. */
export function answer(req: ReceivedRequest): ScriptedReply {
  const stream = req.json?.['stream'] === true;
  if (req.url.startsWith('/chat/')) return stream ? chatStream(req) : { body: fixtureJson('openai-chat-gpt5.json') };
  if (req.url.startsWith('/resp/')) return stream ? { headers: SSE, steps: RESPONSES_STREAM } : { body: RESPONSES_JSON };
  if (req.url.endsWith('/count_tokens')) return { body: { input_tokens: 42 } };
  return stream ? { headers: SSE, steps: MESSAGES_STREAM } : { body: fixtureJson('anthropic-messages-text.json') };
}

export function hostileConfigYaml(url: string): string {
  const t = 'timeouts: { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }';
  return `
server:
  log_level: info
routing:
  max_attempts: 1
  cooldown: { failures: 1 }
upstreams:
  - { id: chat, provider: openai-compatible, base_url: ${url}/chat/v1, api_key: ${UPSTREAM_SECRET}, max_concurrency: 64, ${t} }
  - { id: resp, provider: openai-compatible, base_url: ${url}/resp/v1, api_key: ${UPSTREAM_SECRET}, max_concurrency: 64, options: { chat: false }, ${t} }
  - { id: anth, provider: anthropic, base_url: ${url}/anth/v1, api_key: ${UPSTREAM_SECRET}, max_concurrency: 64, options: { anthropic_version: "2023-06-01", default_max_tokens: 1000 }, ${t} }
models:
  - { name: m-chat, reasoning: true, price: { input: 1, output: 1 }, targets: [{ upstream: chat, model: up-chat }] }
  - { name: m-resp, reasoning: true, price: { input: 1, output: 1 }, targets: [{ upstream: resp, model: up-resp }] }
  - { name: m-anth, reasoning: true, price: { input: 1, output: 1 }, targets: [{ upstream: anth, model: up-anth }] }
keys:
  - { name: team, key_sha256: ${hashKey(CLIENT_KEY)}, models: ["*"] }
`;
}

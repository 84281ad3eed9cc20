/** The ledger tests' fake upstream script and gateway config (test/postgres). */
import { hashKey } from '../../src/auth/keys.js';
import type { Script } from './fake-upstream.js';
import { CLIENT_KEY } from './gateway.js';

const chunk = (o: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', ...o })}\n\n`;
const STREAM = [
  chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }] }),
  chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
  chunk({ choices: [], usage: { prompt_tokens: 13, completion_tokens: 3, total_tokens: 16 } }),
  'data: [DONE]\n\n',
];
const answer = (usage: Record<string, unknown>) => ({
  status: 200,
  body: { id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage },
});

/** The fake upstream: prompts pick the outcome; the cheap model always answers. */
export const script: Script = (req) => {
  const prompt = String((req.json?.['messages'] as { content: string }[] | undefined)?.[0]?.content ?? '');
  if (req.json?.['model'] === 'cheap-x') return answer({ prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 });
  if (prompt === 'fail') return { status: 500, body: { error: { message: 'upstream failed', type: 'server_error', param: null, code: null } } };
  if (prompt === 'bad') return { status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error', param: null, code: null } } };
  if (prompt === 'slow') return { status: 200, headers: { 'content-type': 'text/event-stream' }, steps: [STREAM[0]!, { delayMs: 3000 }, ...STREAM.slice(1)] };
  if (req.json?.['stream'] === true) return { status: 200, headers: { 'content-type': 'text/event-stream' }, steps: STREAM };
  return answer({ prompt_tokens: 11, completion_tokens: 5, total_tokens: 16, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 2 } });
};

/** A gateway config writing its ledger to `dbUrl`, spooling under `spool`. */
export function ledgerConfig(upstream: string, dbUrl: string, spool: string, extra = ''): string {
  return `
routing: { max_attempts: 2 }
ledger: { postgres_url: "${dbUrl}", flush_ms: 50, retry_ms: 200, spool_path: "${spool}"${extra} }
upstreams:
  - { id: fake, provider: openai-compatible, base_url: "${upstream}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: gpt-test
    price: { input: 2.5, cached_input: 1.25, output: 10 }
    fallbacks: [gpt-cheap]
    targets: [{ upstream: fake, model: up-x }]
  - name: gpt-cheap
    price: { input: 0.5, output: 1.5 }
    targets: [{ upstream: fake, model: cheap-x }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)}, metadata: { team: search } }
`;
}


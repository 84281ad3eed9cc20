/**
 * A burst from cold on accounts that stall instead of refusing, each taking fewer calls than
 * the stall detector needs samples of its own (three): the accounts serving the same upstream
 * model pool their first events, so the call over an account's places is seen stalling and
 * cuts its learned limit (router/stalls.ts). Found by a hostile pass (2026-12-07): with accounts
 * that take two calls, no account had a threshold during the first burst, the stalled calls
 * ran 4-5 s as if served at the limit, and the limits were learned at 3x the real cap.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway } from '../helpers/gateway.js';
import { metricValue } from '../helpers/metrics-text.js';
import { chatChunk, deepChat } from '../helpers/deep-calls.js';

/** Calls an account serves at once; its first event of any call beyond them comes STALL_MS late. */
const PLACES = 2;
const STALL_MS = 3_000;

/** A provider account that stalls the first event of a call over its places (open calls counted when it arrives). */
function account(): FakeUpstream {
  const fake = new FakeUpstream();
  return fake.on((req: ReceivedRequest): ScriptedReply => {
    const open = fake.requests.filter((r) => !r.finished && r.abortedAt === null && r !== req).length;
    const late = open >= PLACES ? [{ delayMs: STALL_MS }] : [];
    return {
      status: 200,
      steps: [
        ...late,
        chatChunk({ role: 'assistant', content: '' }),
        { delayMs: 300 },
        chatChunk({ content: 'ok' }),
        chatChunk({}, 'stop'),
        'data: [DONE]\n\n',
      ],
    };
  });
}

const accounts = [account(), account()];
before(async () => {
  for (const a of accounts) await a.start();
});
after(async () => {
  for (const a of accounts) await a.close();
});

test('cold, on accounts that take two calls each: the third call on each is seen stalling, and the learned limits come down to the real two', async () => {
  const gw = await startGateway(`
server: { log_level: warn }
upstreams:
  - { id: acct-a, provider: openai-compatible, base_url: "${accounts[0]!.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
  - { id: acct-b, provider: openai-compatible, base_url: "${accounts[1]!.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: house
    reasoning: true
    price: { input: 1, output: 2 }
    targets: [{ upstream: acct-a, model: house-up }, { upstream: acct-b, model: house-up }]
keys:
  - { name: agents, key_sha256: ${hashKey(CLIENT_KEY)} }
`);
  try {
    const openai = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const call = (i: number): Promise<string> => deepChat(openai, 'house', `call ${i}`);
    // Four calls first, two on each account (the start guess is 4 a account, so the spread puts two on each); then one more on each, over its places.
    const first = Array.from({ length: 4 }, (_, i) => call(i));
    await new Promise((r) => setTimeout(r, 100));
    const more = Array.from({ length: 2 }, (_, i) => call(4 + i));
    assert.deepEqual(await Promise.all([...first, ...more]), Array(6).fill('ok'), 'every call answered');
    const text = await gw.metricsText();
    for (const id of ['acct-a', 'acct-b']) {
      const limit = metricValue(text, 'switchyard_capacity_limit', { upstream: id });
      assert.ok(limit !== undefined && limit <= PLACES, `${id}: the stall cut the learned limit to the account's ${PLACES} places (limit ${String(limit)})`);
    }
  } finally {
    await gw.close();
  }
});

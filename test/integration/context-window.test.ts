/**
 * Context windows (issue 32), end to end: a prompt estimated over its model's
 * `context_window` gets a 400 in the client's own API shape naming the window and the
 * estimate, or goes to the model's `context_fallback` (marked `x-switchyard-fallback`), with
 * no upstream called for the refused model; a prompt under the window and a model with no
 * window are untouched. The real gateway on port 0 against fake upstreams on loopback.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, finishedLine, startGateway, type RawReply, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';
import { NO_HEALTH, configYaml, content, errorOf, errorReply, ok, post } from '../helpers/failover.js';

/** Small windows, so test prompts pass them: ~3,000 tokens of text against 1,000. */
const WINDOW = 1_000;
const LONG = 'lorem '.repeat(3_000);
/** ~600 tokens in ~3,600 bytes: over the window in bytes (so it is counted), under it in tokens. */
const MEDIUM = 'lorem '.repeat(600);

const PATHS = { chat: '/v1/chat/completions', responses: '/v1/responses', messages: '/v1/messages' } as const;
type Api = keyof typeof PATHS;

function bodyFor(api: Api, model: string, text: string): Record<string, unknown> {
  if (api === 'responses') return { model, input: text };
  if (api === 'messages') return { model, max_tokens: 100, messages: [{ role: 'user', content: text }] };
  return { model, messages: [{ role: 'user', content: text }] };
}

async function postTo(gw: TestGateway, api: Api, body: Record<string, unknown>): Promise<RawReply> {
  const t0 = Date.now();
  const res = await fetch(`${gw.url}${PATHS[api]}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text(), ms: Date.now() - t0 };
}

/** The numbers a refusal's message names: the window, and the estimate (the first number after it). */
function numbersOf(message: string): number[] {
  return [...message.matchAll(/\d+/g)].map((m) => Number(m[0]));
}

describe('context windows', () => {
  let gw: TestGateway;
  const f: Record<string, FakeUpstream> = {};

  before(async () => {
    for (const id of ['s1', 'm1', 'l1', 'u1', 'p1']) {
      const fake = await new FakeUpstream().start();
      fake.on((req) => (id === 'p1' ? errorReply(503) : ok(`${id} answered for ${String(req.json?.['model'])}`)));
      f[id] = fake;
    }
    gw = await startGateway(
      configYaml(
        NO_HEALTH,
        Object.entries(f).map(([id, fake]) => ({ id, url: fake.url })),
        [
          // S: a small window and nowhere to go. M: the same window, with L (larger) as its context fallback. U: no window.
          { name: 'S', targets: ['s1'], contextWindow: WINDOW },
          { name: 'M', targets: ['m1'], contextWindow: WINDOW, contextFallback: 'L' },
          { name: 'L', targets: ['l1'], contextWindow: 100_000 },
          { name: 'U', targets: ['u1'] },
          // P: a window the long prompt fits, an upstream that fails, and fallbacks S (too small for it) and U.
          { name: 'P', targets: ['p1'], contextWindow: 5_000, fallbacks: ['S', 'U'] },
        ],
      ),
    );
  });
  after(async () => {
    await gw.close();
    await Promise.all(Object.values(f).map((u) => u.close()));
  });

  test('over the window, no context fallback: a 400 in the chat, Responses and Messages shapes, naming window and estimate; no upstream called', async () => {
    const m0 = await gw.metricsText();
    for (const api of ['chat', 'responses', 'messages'] as const) {
      const raw = await postTo(gw, api, bodyFor(api, 'S', LONG));
      assert.equal(raw.status, 400, `${api}: ${raw.text}`);
      assert.equal(raw.headers.get('x-should-retry'), 'false', api);
      const body = JSON.parse(raw.text) as Record<string, unknown>;
      let message: string;
      if (api === 'messages') {
        assert.equal(body['type'], 'error');
        const error = body['error'] as { type: string; message: string };
        assert.equal(error.type, 'invalid_request_error');
        // Anthropic's own wording: "prompt is too long: N tokens > M maximum".
        const m = /^prompt is too long: (\d+) tokens > (\d+) maximum/.exec(error.message);
        assert.ok(m, error.message);
        assert.ok(Number(m[1]) > WINDOW, error.message);
        assert.equal(Number(m[2]), WINDOW);
        assert.match(error.message, /max_tokens 100/);
        message = error.message;
      } else {
        const error = errorOf(raw);
        assert.equal(error.type, 'invalid_request_error');
        assert.equal(error.code, 'context_length_exceeded');
        assert.equal(error.param, api === 'chat' ? 'messages' : 'input');
        assert.match(error.message, new RegExp(`maximum context length is ${WINDOW} tokens`));
        const [window, estimate] = numbersOf(error.message);
        assert.equal(window, WINDOW);
        assert.ok(estimate! > 2_000 && estimate! < 4_000, `estimate ~3,000 tokens: ${error.message}`);
        message = error.message;
      }
      assert.match(message, /`S`/, 'names the model');
      assert.match(message, /[Cc]ompact or shorten/, 'says what to do');
      const line = await finishedLine(gw, raw.headers.get('x-request-id')!);
      assert.equal(line['status'], 400);
      assert.equal(line['attempts'], 0);
    }
    assert.equal(f['s1']!.requests.length, 0, 'the upstream was never called');
    const m1 = await gw.metricsText();
    assert.equal(metricSum(m1, 'switchyard_upstream_attempts_total') - metricSum(m0, 'switchyard_upstream_attempts_total'), 0);
  });

  test('the output cap counts: a prompt under the window whose max_tokens takes it over is refused, naming both parts', async () => {
    const raw = await post(gw, 'S', { messages: [{ role: 'user', content: MEDIUM }], max_tokens: 500 });
    assert.equal(raw.status, 400, raw.text);
    const error = errorOf(raw);
    assert.equal(error.code, 'context_length_exceeded');
    assert.match(error.message, /500 requested for the output/);
    assert.match(error.message, /lower the output limit/);
    assert.equal(f['s1']!.requests.length, 0);
  });

  test('over the window, with a context fallback: served by the fallback model on its upstream, marked M->L', async () => {
    const m0 = await gw.metricsText();
    for (const api of ['chat', 'messages'] as const) {
      const raw = await postTo(gw, api, bodyFor(api, 'M', LONG));
      assert.equal(raw.status, 200, `${api}: ${raw.text}`);
      assert.equal(raw.headers.get('x-switchyard-fallback'), 'M->L', api);
      assert.equal(raw.headers.get('x-switchyard-upstream'), 'l1', api);
      assert.equal(raw.headers.get('x-switchyard-model'), 'L-up', api);
      assert.equal(raw.headers.get('x-switchyard-attempts'), '1', api);
    }
    assert.equal(f['m1']!.requests.length, 0, "the too-small model's upstream was never called");
    assert.equal(f['l1']!.requests.length, 2);
    assert.equal(f['l1']!.requests[0]!.json?.['model'], 'L-up');
    const m1 = await gw.metricsText();
    assert.equal(metricSum(m1, 'switchyard_fallbacks_total', { from: 'M', to: 'L' }) - metricSum(m0, 'switchyard_fallbacks_total', { from: 'M', to: 'L' }), 2);
  });

  test('under the window: unaffected, whether the body is too small to count or counted and under', async () => {
    for (const text of ['hello', MEDIUM]) {
      for (const model of ['S', 'M']) {
        const raw = await post(gw, model, { messages: [{ role: 'user', content: text }] });
        assert.equal(raw.status, 200, raw.text);
        assert.equal(raw.headers.get('x-switchyard-fallback'), null);
        assert.equal(content(raw), `${model.toLowerCase()}1 answered for ${model}-up`);
      }
    }
  });

  test("a counted prompt skips the fallbacks whose window it passes: P's upstream fails, S (1,000) is passed over, U serves", async () => {
    const s0 = f['s1']!.requests.length;
    const raw = await post(gw, 'P', { messages: [{ role: 'user', content: LONG }] });
    assert.equal(raw.status, 200, raw.text);
    assert.equal(raw.headers.get('x-switchyard-fallback'), 'P->U');
    assert.equal(f['p1']!.requests.length, 1);
    assert.equal(f['s1']!.requests.length, s0, 'the fallback too small for the prompt was not tried');
  });

  test('a model without context_window is never counted: a prompt far past any window goes upstream', async () => {
    const before = f['u1']!.requests.length;
    const huge = 'lorem '.repeat(200_000);
    const raw = await post(gw, 'U', { messages: [{ role: 'user', content: huge }], max_tokens: 1_000_000 });
    assert.equal(raw.status, 200, raw.text);
    assert.equal(f['u1']!.requests.length, before + 1);
  });
});

/**
 * A deep-reasoning burst over accounts that are full, end to end, on the default routing
 * settings: two provider accounts that each take 2 calls at once (a third call gets the
 * provider's 429), and 16 deep streaming calls at once through the official SDKs, half on
 * `/v1/messages` (Claude Code's API) and half on `/v1/responses` (Codex's). The gateway's
 * rule: queue up to a bounded wait, then shed; a 429 only when the client's own key is over
 * its limits. So every call completes (the ones that found every account hot waited for a
 * place, or went down the model's shed ladder), none gets a 429, and each `request finished`
 * line says whether and how its call was shed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { fixtureJson } from '../helpers/recordings.js';

/** Calls an account takes at once; a call above them is refused with a 429. */
const PLACES = 2;
/** How long an account takes to answer one call, ms (first event at once, then the rest). */
const CALL_MS = 800;

/** One chat-completions SSE chunk. */
function chunk(delta: Record<string, unknown>, finish: string | null = null, usage?: Record<string, number>): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-burst', object: 'chat.completion.chunk', created: 1, model: 'house-up', choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
}

/**
 * A provider account: answers a streamed chat call in about CALL_MS while it has its places
 * (PLACES calls open), else at once with the recorded OpenAI 429 (rate_limit_exceeded).
 */
class Account {
  readonly fake: FakeUpstream;
  /** Most calls it had open at once, and how many it refused. */
  max = 0;
  refused = 0;

  /** @param places calls it takes at once (PLACES unless set). */
  constructor(
    readonly id: string,
    private readonly places = PLACES,
  ) {
    this.fake = new FakeUpstream().on((req) => this.answer(req));
  }

  private open(): number {
    return this.fake.requests.filter((r) => !r.finished && r.abortedAt === null).length;
  }

  private answer(req: ReceivedRequest): ScriptedReply {
    const open = this.open();
    if (open > this.places) {
      this.refused++;
      req.finished = true;
      return { status: 429, body: fixtureJson('openai-error-429-rate-limit-exceeded.json') };
    }
    this.max = Math.max(this.max, open);
    return {
      status: 200,
      steps: [
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: `from ${this.id}` }),
        { delayMs: CALL_MS },
        chunk({ content: ', done.' }),
        chunk({}, 'stop'),
        chunk({}, null, { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 }),
        'data: [DONE]\n\n',
      ],
    };
  }
}

/**
 * The model of both agents (their ids reach it through `aliases`) on the two accounts; with
 * `shed`, also the model's shed settings and a non-reasoning `cheap` model on account `c`.
 */
function yaml(a: string, b: string, shed?: { line: string; cheap: string }): string {
  return `
server: { log_level: info }
upstreams:
  - { id: acct-a, provider: openai-compatible, base_url: "${a}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
  - { id: acct-b, provider: openai-compatible, base_url: "${b}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }${
    shed
      ? `
  - { id: acct-c, provider: openai-compatible, base_url: "${shed.cheap}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }`
      : ''
  }
models:
  - name: house
    aliases: ["claude-*", "gpt-5*"]
    reasoning: true
    price: { input: 1, output: 2 }${
      shed
        ? `
    shed: ${shed.line}`
        : ''
    }
    targets: [{ upstream: acct-a, model: house-up }, { upstream: acct-b, model: house-up }]${
      shed
        ? `
  - name: cheap
    price: { input: 0.1, output: 0.2 }
    targets: [{ upstream: acct-c, model: cheap-up }]`
        : ''
    }
keys:
  - { name: agents, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

interface Outcome {
  readonly api: 'messages' | 'responses';
  readonly status: number;
  readonly text: string;
}

/** 16 deep streaming calls at once, half on each API, through the official SDKs (no SDK retries); their outcomes and `request finished` lines. */
async function burst(gw: TestGateway): Promise<{ outcomes: Outcome[]; lines: Record<string, unknown>[]; summary: string }> {
  const anthropic = new Anthropic({ apiKey: CLIENT_KEY, baseURL: gw.url, maxRetries: 0 });
  const openai = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const messages = async (i: number): Promise<Outcome> => {
    try {
      const stream = anthropic.messages.stream({
        model: 'claude-sonnet-4-6',
        max_tokens: 20_000,
        thinking: { type: 'enabled', budget_tokens: 16_384 },
        messages: [{ role: 'user', content: `burst call ${i}: think hard` }],
      });
      const msg = await stream.finalMessage();
      return { api: 'messages', status: 200, text: msg.content.map((b) => (b.type === 'text' ? b.text : '')).join('') };
    } catch (err) {
      return { api: 'messages', status: err instanceof Anthropic.APIError ? (err.status ?? -1) : -1, text: String(err) };
    }
  };
  const responses = async (i: number): Promise<Outcome> => {
    try {
      const stream = openai.responses.stream({ model: 'gpt-5.5-codex', input: `burst call ${i}: think hard`, reasoning: { effort: 'high' } });
      const res = await stream.finalResponse();
      return { api: 'responses', status: 200, text: res.output_text };
    } catch (err) {
      return { api: 'responses', status: err instanceof OpenAI.APIError ? (err.status ?? -1) : -1, text: String(err) };
    }
  };
  const logStart = gw.finished().length;
  const outcomes = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? messages(i) : responses(i))));
  const lines = await waitFor(() => (gw.finished().length - logStart >= 16 ? gw.finished().slice(logStart) : undefined), 3_000, '16 finished lines');
  const summary = JSON.stringify(outcomes.map((o, i) => `${o.api}:${o.status}:${String(lines[i]?.['shed'] ?? '-')}:${o.text.slice(0, 80)}`));
  return { outcomes, lines, summary };
}

/** Every call completed, none with a 429, and no account ever had more than `places` calls open. */
function assertAllServed(outcomes: Outcome[], accounts: Account[], places: number, summary: string, text: RegExp): void {
  assert.equal(outcomes.filter((o) => o.status === 429).length, 0, `no call got a 429: ${summary}`);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    Array(16).fill(200),
    `every call completed: ${summary}`,
  );
  for (const o of outcomes) assert.match(o.text, text, summary);
  for (const a of accounts) assert.ok(a.max <= places, `${a.id} never had more than ${places} calls open: ${a.max}`);
}

describe('a deep-reasoning burst over accounts that are full', () => {
  const accounts = [new Account('acct-a'), new Account('acct-b')];
  const cheap = new Account('acct-c', Number.POSITIVE_INFINITY);
  let gw: TestGateway | undefined;
  before(async () => {
    for (const a of [...accounts, cheap]) await a.fake.start();
  });
  after(async () => {
    for (const a of [...accounts, cheap]) await a.fake.close();
  });

  test('the model has no rung below the wait (default shed settings): the calls that find every account hot wait for a place, and all complete', async () => {
    gw = await startGateway(yaml(accounts[0]!.fake.url, accounts[1]!.fake.url));
    try {
      const { outcomes, lines, summary } = await burst(gw);
      assertAllServed(outcomes, accounts, PLACES, summary, /^from acct-[ab], done\.$/);
      for (const l of lines) assert.equal(l['status'], 200);
      const shed = lines.filter((l) => l['shed'] !== undefined);
      assert.ok(shed.length > 0, `some calls found every account hot: ${summary}`);
      for (const l of shed) assert.match(String(l['shed']), /^queued:\d+ms$/, `a call that waited for a place says how long: ${summary}`);
    } finally {
      await gw.close();
    }
  });

  test('with a cheap fallback and a short wait (shed.wait_ms 1500): the calls wait first, then are shed to the cheap model, all complete', async () => {
    gw = await startGateway(yaml(accounts[0]!.fake.url, accounts[1]!.fake.url, { line: '{ wait_ms: 1500, fallback: cheap }', cheap: cheap.fake.url }));
    try {
      const { outcomes, lines, summary } = await burst(gw);
      assertAllServed(outcomes, accounts, PLACES, summary, /^from acct-[abc], done\.$/);
      // From cold the wait's bound is known once the first calls end (a typical call, CALL_MS); the
      // calls still without a place then go down: each waited about one call, then ran the cheap one.
      const waitedFirst = lines.filter((l) => l['shed'] === 'house->cheap' && Number(l['duration_ms']) >= 1.5 * CALL_MS);
      assert.ok(waitedFirst.length > 0, `some calls waited for a place before any rung below: ${summary}`);
      const toCheap = lines.filter((l) => l['shed'] === 'house->cheap');
      assert.ok(toCheap.length > 0, `the calls still without a place after the wait were shed to the cheap model: ${summary}`);
      for (const l of toCheap) assert.equal(l['upstream'], 'acct-c');
      assert.equal(cheap.fake.requests.length, toCheap.length, 'only the shed calls reached the cheap account');
    } finally {
      await gw.close();
    }
  });

  test('from cold, with a cheap fallback (default wait): a call that waited for the first answers is shed when they come, not handed a place after waiting a whole call', async () => {
    // Accounts that refuse nothing, whose places the gateway holds to 2 each (capacity typed in): the wait rung alone decides.
    const roomy = [new Account('acct-a', Number.POSITIVE_INFINITY), new Account('acct-b', Number.POSITIVE_INFINITY)];
    for (const a of roomy) await a.fake.start();
    const text = yaml(roomy[0]!.fake.url, roomy[1]!.fake.url, { line: '{ fallback: cheap }', cheap: cheap.fake.url }).replace(
      /(id: acct-[ab], .*?) \}/g,
      '$1, capacity: { start: 2, ceiling: 2 } }',
    );
    gw = await startGateway(text);
    try {
      const { outcomes, lines, summary } = await burst(gw);
      assertAllServed(outcomes, roomy, Infinity, summary, /^from acct-[abc], done\.$/);
      assert.ok(
        lines.some((l) => l['shed'] === 'house->cheap'),
        `the calls that waited for the first answers went to the cheap model: ${summary}`,
      );
      // The wait rung's bound is 3/4 of a typical call (CALL_MS): nothing waits a whole call and then runs one.
      const waits = lines.map((l) => /^queued:(\d+)ms$/.exec(String(l['shed'] ?? ''))?.[1]).filter((w) => w !== undefined);
      for (const w of waits) assert.ok(Number(w) < 0.9 * CALL_MS, `a wait for a place stays under a typical call: queued ${w} ms: ${summary}`);
    } finally {
      await gw.close();
      for (const a of roomy) await a.fake.close();
    }
  });
});

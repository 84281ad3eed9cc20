/**
 * `previous_response_id` follow-ups that survive routing, through the `openai` SDK: two
 * Responses accounts behind one model (the default `balanced` strategy spreads the first
 * turns over both), two gateway replicas sharing a real Redis. Each fake account keeps the
 * responses it made and refuses a follow-up to one it does not know, as OpenAI does
 * (400 `previous_response_not_found`), so a follow-up that lands on the wrong account breaks.
 * Then the owner is taken away mid-conversation: the follow-up is rebuilt from the journal
 * for the other account (`x-switchyard-continuation: migrated`); a chat-completions account
 * gets the whole conversation as messages; an id nobody journalled is refused clearly.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { BadRequestError, NotFoundError } from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, OTHER_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';
import { fixtureJson, sseEvents } from '../helpers/recordings.js';
import { RedisServer } from '../helpers/redis-server.js';

type Obj = Record<string, unknown>;

/** The recorded response object of `openai-responses-stream-text.sse` (its `response.completed`). */
function recordedResponse(): Obj {
  for (const e of sseEvents('openai-responses-stream-text.sse')) {
    const data = /^data: (.*)$/m.exec(e)?.[1];
    const p = data ? (JSON.parse(data) as Obj) : null;
    if (p?.['type'] === 'response.completed') return p['response'] as Obj;
  }
  throw new Error('no response.completed in the recording');
}

/** A Responses account that keeps what it made and knows nothing else. */
class ResponsesAccount {
  readonly upstream = new FakeUpstream();
  readonly made = new Set<string>();
  down = false;
  constructor(readonly name: string) {}
  async start(): Promise<this> {
    await this.upstream.start();
    const template = recordedResponse();
    this.upstream.on((req: ReceivedRequest): ScriptedReply => {
      if (this.down) return { status: 503, body: { error: { message: 'down', type: 'server_error', code: null } } };
      const prev = req.json?.['previous_response_id'];
      if (typeof prev === 'string' && !this.made.has(prev)) {
        return {
          status: 400,
          body: {
            error: {
              message: `Previous response with id '${prev}' not found.`,
              type: 'invalid_request_error',
              param: 'previous_response_id',
              code: 'previous_response_not_found',
            },
          },
        };
      }
      const id = `resp_${this.name}_${randomUUID().replace(/-/g, '')}`;
      this.made.add(id);
      const output = [
        {
          id: `msg_${this.name}_${this.made.size}`,
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', annotations: [], logprobs: [], text: `${this.name} turn` }],
        },
      ];
      return { status: 200, body: { ...template, id, output, previous_response_id: prev ?? null } };
    });
    return this;
  }
}

function yaml(a: string, b: string, chat: string, redisUrl: string, prefix: string): string {
  return `
routing: { max_attempts: 3 }
store: { redis_url: "${redisUrl}", key_prefix: "${prefix}" }
upstreams:
  - { id: acct-a, provider: openai-compatible, base_url: "${a}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { responses: true } }
  - { id: acct-b, provider: openai-compatible, base_url: "${b}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { responses: true } }
  - { id: chat-acct, provider: openai-compatible, base_url: "${chat}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: gpt-resp
    price: { input: 1, output: 1 }
    targets: [{ upstream: acct-a, model: gpt-x }, { upstream: acct-b, model: gpt-x }]
  - name: chat-only
    price: { input: 1, output: 1 }
    targets: [{ upstream: chat-acct, model: chat-x }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
  - { name: team-b, key_sha256: ${hashKey(OTHER_KEY)} }
`;
}

describe('Responses follow-ups across two accounts and two replicas on Redis', () => {
  let redis: RedisServer;
  const a = new ResponsesAccount('a');
  const b = new ResponsesAccount('b');
  const chat = new FakeUpstream();
  let gw1: TestGateway;
  let gw2: TestGateway;

  before(async () => {
    redis = await RedisServer.start();
    await Promise.all([a.start(), b.start(), chat.start()]);
    chat.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
    const config = yaml(a.upstream.url, b.upstream.url, chat.url, redis.url, `cont-${randomUUID()}`);
    gw1 = await startGateway(config);
    gw2 = await startGateway(config);
  });
  after(async () => {
    await Promise.all([gw1?.close(), gw2?.close()]);
    await Promise.all([a.upstream.close(), b.upstream.close(), chat.close()]);
    await redis.stop();
  });

  test('50 three-turn conversations, turns alternating between the replicas: none breaks, every follow-up reaches the account that made its previous response', async () => {
    const clients = [gw1.client(), gw2.client()];
    const broken: string[] = [];
    const firstOn = { a: 0, b: 0 };
    await Promise.all(
      Array.from({ length: 50 }, async (_x, k) => {
        let prev: string | undefined;
        let owner: string | undefined;
        for (let turn = 0; turn < 3; turn++) {
          const client = clients[(k + turn) % 2]!;
          try {
            const r = await client.responses.create({
              model: 'gpt-resp',
              input: `conversation ${k} turn ${turn}`,
              ...(prev ? { previous_response_id: prev } : {}),
            });
            const by = r.id.startsWith('resp_a_') ? 'a' : 'b';
            if (turn === 0) firstOn[by]++;
            else if (by !== owner) broken.push(`conversation ${k} turn ${turn} moved from ${owner} to ${by}`);
            owner = by;
            prev = r.id;
          } catch (err) {
            broken.push(`conversation ${k} turn ${turn}: ${String(err)}`);
            return;
          }
        }
      }),
    );
    assert.deepEqual(broken, []);
    assert.ok(firstOn.a > 5 && firstOn.b > 5, `the first turns were spread over both accounts: ${JSON.stringify(firstOn)}`);
  });

  test('the owner taken away mid-conversation: the follow-up is rebuilt for the other account from the journal, marked migrated', async () => {
    const client = gw1.client();
    // Start conversations until one lands on acct-a.
    let first = await client.responses.create({ model: 'gpt-resp', input: 'remember the word violet' });
    for (let i = 0; i < 20 && !first.id.startsWith('resp_a_'); i++)
      first = await client.responses.create({ model: 'gpt-resp', input: 'remember the word violet' });
    assert.ok(first.id.startsWith('resp_a_'), 'a conversation started on acct-a');
    a.down = true;
    try {
      b.upstream.requests.length = 0;
      const raw = await client.responses.create({ model: 'gpt-resp', input: 'which word?', previous_response_id: first.id }).withResponse();
      assert.equal(raw.response.headers.get('x-switchyard-continuation'), 'migrated');
      assert.ok(raw.data.id.startsWith('resp_b_'), raw.data.id);
      const sent = b.upstream.requests.at(-1)!.json!;
      assert.equal(sent['previous_response_id'], undefined, 'no id the other account does not know');
      const input = sent['input'] as Obj[];
      assert.deepEqual(input[0], { role: 'user', content: 'remember the word violet' });
      assert.equal((input[1]!['content'] as Obj[])[0]!['text'], 'a turn', "the owner's answer, by value");
      assert.equal(input[1]!['id'], undefined, "no item id of the owner's store");
      assert.deepEqual(input[2], { role: 'user', content: 'which word?' });
      // The migrated turn is journalled too: the next follow-up continues on acct-b.
      const next = await gw2.client().responses.create({ model: 'gpt-resp', input: 'and again?', previous_response_id: raw.data.id }).withResponse();
      assert.equal(next.response.headers.get('x-switchyard-continuation'), 'pinned');
      assert.ok(next.data.id.startsWith('resp_b_'));
    } finally {
      a.down = false;
    }
  });

  test('a chat-completions account keeps nothing: the follow-up carries the whole conversation as messages, marked rebuilt', async () => {
    const client = gw2.client();
    const r1 = await client.responses.create({ model: 'chat-only', instructions: 'Be brief.', input: 'What is the capital of France?' });
    chat.requests.length = 0;
    const r2 = await gw1
      .client()
      .responses.create({ model: 'chat-only', instructions: 'Be brief.', input: 'And of Italy?', previous_response_id: r1.id })
      .withResponse();
    assert.equal(r2.response.headers.get('x-switchyard-continuation'), 'rebuilt');
    const messages = chat.requests[0]!.json!['messages'] as Obj[];
    assert.deepEqual(
      messages.map((m) => [m['role'], m['content']]),
      [
        ['system', 'Be brief.'],
        ['user', 'What is the capital of France?'],
        ['assistant', r1.output_text],
        ['user', 'And of Italy?'],
      ],
    );
  });

  test('GET, input_items and DELETE of a response answer from the journal, on any replica, for the key that made it only', async () => {
    const r1 = await gw1.client().responses.create({ model: 'chat-only', input: 'What is the capital of France?' });
    const r2 = await gw2.client().responses.create({ model: 'chat-only', input: 'And of Italy?', previous_response_id: r1.id });
    const got = await gw1.client().responses.retrieve(r2.id);
    assert.equal(got.id, r2.id);
    assert.deepEqual(got.output, r2.output);
    const items = await gw2.client().responses.inputItems.list(r2.id);
    assert.deepEqual(
      items.data.map((i) => (i as unknown as Obj)['role']),
      ['user', 'assistant', 'user'],
      'the conversation up to this response, newest first',
    );
    assert.equal((items.data[0] as unknown as Obj)['content'], 'And of Italy?');
    // Paging: limit, order, after.
    const page = (q: string) =>
      fetch(`${gw1.url}/v1/responses/${r2.id}/input_items?${q}`, { headers: { authorization: `Bearer ${CLIENT_KEY}` } }).then(async (res) => ({
        status: res.status,
        body: (await res.json()) as { data: Obj[]; has_more: boolean; error?: { param: string } },
      }));
    const first = await page('limit=1&order=asc');
    assert.deepEqual([first.body.data.length, first.body.data[0]!['content'], first.body.has_more], [1, 'What is the capital of France?', true]);
    const rest = await page(`order=asc&after=${String(first.body.data[0]!['id'])}`);
    assert.deepEqual([rest.body.data.length, rest.body.has_more], [2, false]);
    for (const bad of ['limit=0', 'limit=abc', 'order=sideways', 'after=nope']) {
      const r = await page(bad);
      assert.equal(r.status, 400, bad);
      assert.equal(r.body.error?.param, bad.split('=')[0]);
    }
    const other = gw1.client({ apiKey: OTHER_KEY });
    const foreign = await other.responses.retrieve(r2.id).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(foreign instanceof NotFoundError, `another key gets 404: ${String(foreign)}`);
    await gw2.client().responses.delete(r2.id);
    const gone = await gw1
      .client()
      .responses.retrieve(r2.id)
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(gone instanceof NotFoundError, `deleted: ${String(gone)}`);
  });

  test('POST /v1/responses/compact goes to the account that made the previous response; a model with no Responses account is refused', async () => {
    const r1 = await gw1.client().responses.create({ model: 'gpt-resp', input: 'a long conversation' });
    const owner = r1.id.startsWith('resp_a_') ? a : b;
    owner.upstream.requests.length = 0;
    const res = await fetch(`${gw2.url}/v1/responses/compact`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-resp', previous_response_id: r1.id }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get('x-switchyard-upstream'), owner === a ? 'acct-a' : 'acct-b');
    assert.equal(owner.upstream.requests[0]?.url, '/v1/responses/compact');
    assert.equal(owner.upstream.requests[0]?.json?.['model'], 'gpt-x');
    const refused = await fetch(`${gw1.url}/v1/responses/compact`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-only', input: 'x' }),
    });
    assert.equal(refused.status, 400);
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'unsupported_api');
  });

  test('a response too large to journal, on a chat-completions account: its follow-up is refused naming why, not sent without its history', async () => {
    const big = await gw1.client().responses.create({ model: 'chat-only', input: 'x'.repeat(4_300_000) });
    chat.requests.length = 0;
    const err = await gw2
      .client()
      .responses.create({ model: 'chat-only', input: 'and then?', previous_response_id: big.id })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(err instanceof BadRequestError, String(err));
    assert.equal(err.code, 'previous_response_not_found');
    assert.match(err.message, /did not journal it/);
    assert.equal(chat.requests.length, 0);
  });

  test('an id the gateway never journalled, on a model with no Responses account: 400 previous_response_not_found naming why, upstream untouched', async () => {
    chat.requests.length = 0;
    const err = await gw1
      .client()
      .responses.create({ model: 'chat-only', input: 'hi', previous_response_id: 'resp_unknown' })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(err instanceof BadRequestError, String(err));
    assert.equal(err.code, 'previous_response_not_found');
    assert.equal(err.param, 'previous_response_id');
    assert.match(err.message, /no journal of it/);
    assert.equal(chat.requests.length, 0);
  });
});

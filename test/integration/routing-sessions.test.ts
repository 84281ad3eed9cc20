/**
 * The `sticky` session of each coding agent, end to end (src/pipeline/session.ts): the
 * headers and body fields Claude Code 2.1.332 and Codex 0.171.0 send (Claude Code's from
 * test/captures/claude-code-2.1.332-first-request.json; Codex's as it sent them to a local
 * capture server: `session-id`, `thread-id` and `prompt_cache_key`, all its session id) keep
 * a session's turns on one account; the same session id under two client keys is two
 * sessions; a Responses follow-up (`previous_response_id`) stays in its conversation's session.
 *
 * The real gateway on port 0 in front of three real fake chat accounts on loopback; where a
 * call went is read from `x-switchyard-upstream` and `x-switchyard-sticky`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, OTHER_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';
import { BASE_ROUTING, chat, clusterYaml, MODEL, ok } from '../helpers/routing-cluster.js';

type Obj = Record<string, unknown>;
const CAPTURE = JSON.parse(readFileSync(new URL('../../../test/captures/claude-code-2.1.332-first-request.json', import.meta.url), 'utf8')) as {
  headers: Record<string, string>;
  body: Obj;
};

interface Turn {
  status: number;
  upstream: string | null;
  sticky: string | null;
  json: Obj;
}

/** Claude Code's headers as captured, with `session` as its session id. */
function claudeHeaders(session: string): Record<string, string> {
  return { ...CAPTURE.headers, 'x-claude-code-session-id': session };
}

/** Codex 0.171.0's session headers over HTTP (seen on a capture server), for session `id`. */
function codexHeaders(id: string): Record<string, string> {
  return {
    'session-id': id,
    'thread-id': id,
    'x-client-request-id': id,
    originator: 'codex_exec',
    'user-agent': 'codex_exec/0.171.0 (Debian 12.0.0; x86_64) unknown (codex_exec; 0.171.0)',
  };
}

describe('sticky sessions of the coding agents', () => {
  const fakes: Record<string, FakeUpstream> = {};
  let gw: TestGateway;

  before(async () => {
    for (const id of ['a', 'b', 'c']) fakes[id] = (await new FakeUpstream().start()).on(() => ok());
    const targets = Object.keys(fakes).map((id) => ({ id }));
    // A second client key, allowed every model.
    const yaml = `${clusterYaml(targets, fakes, `  strategy: sticky\n${BASE_ROUTING}`)}  - name: team-b\n    key_sha256: ${hashKey(OTHER_KEY)}\n    models: ["*"]\n`;
    gw = await startGateway(yaml);
  });
  after(async () => {
    await gw?.close();
    for (const f of Object.values(fakes)) await f.close();
  });

  async function post(path: string, body: Obj, headers: Record<string, string>, key = CLIENT_KEY): Promise<Turn> {
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      body: JSON.stringify({ model: MODEL, ...body }),
    });
    const json = (await res.json()) as Obj;
    return { status: res.status, upstream: res.headers.get('x-switchyard-upstream'), sticky: res.headers.get('x-switchyard-sticky'), json };
  }

  /** One Claude Code turn (`/v1/messages`, its `metadata.user_id` as captured unless given). */
  const claudeTurn = (session: string, key = CLIENT_KEY, userId = (CAPTURE.body['metadata'] as Obj)['user_id']) =>
    post('/v1/messages', { max_tokens: 256, metadata: { user_id: userId }, messages: [{ role: 'user', content: 'hi' }] }, claudeHeaders(session), key);

  /** One Codex turn over HTTP (`/v1/responses`, the whole conversation as input, `store: false`). */
  const codexTurn = (session: string, n: number, key = CLIENT_KEY, cacheKey = session) =>
    post(
      '/v1/responses',
      { store: false, stream: false, prompt_cache_key: cacheKey, input: Array.from({ length: n + 1 }, (_, i) => ({ role: 'user', content: `turn ${i}` })) },
      codexHeaders(session),
      key,
    );

  const allOk = (turns: Turn[]) =>
    assert.ok(
      turns.every((t) => t.status === 200),
      JSON.stringify(turns.find((t) => t.status !== 200)?.json),
    );

  test("Claude Code: a session's turns (x-claude-code-session-id) stay on one account", async () => {
    const turns: Turn[] = [];
    for (let i = 0; i < 6; i++) turns.push(await claudeTurn('99b53774-ae3e-4d06-bd01-724b2bebf6bd'));
    allOk(turns);
    assert.deepEqual(
      turns.map((t) => t.sticky),
      ['new', 'pinned', 'pinned', 'pinned', 'pinned', 'pinned'],
    );
    assert.equal(new Set(turns.map((t) => t.upstream)).size, 1);
    // The header names the session, before `metadata.user_id`: a user id never seen stays pinned.
    const other = await claudeTurn('99b53774-ae3e-4d06-bd01-724b2bebf6bd', CLIENT_KEY, '{"device_id":"d1","account_uuid":"","session_id":"never-seen"}');
    assert.deepEqual([other.sticky, other.upstream], ['pinned', turns[0]!.upstream]);
  });

  test("Codex: a session's turns (session-id, prompt_cache_key) stay on one account", async () => {
    const turns: Turn[] = [];
    for (let i = 0; i < 6; i++) turns.push(await codexTurn('01a24949-28a6-7133-b248-0992800c88b1', i));
    allOk(turns);
    assert.deepEqual(
      turns.map((t) => t.sticky),
      ['new', 'pinned', 'pinned', 'pinned', 'pinned', 'pinned'],
    );
    assert.equal(new Set(turns.map((t) => t.upstream)).size, 1);
    // `session-id` comes before `prompt_cache_key`: a cache key never seen stays pinned.
    const other = await codexTurn('01a24949-28a6-7133-b248-0992800c88b1', 6, CLIENT_KEY, 'pck-never-seen');
    assert.deepEqual([other.sticky, other.upstream], ['pinned', turns[0]!.upstream]);
  });

  test('an earlier Codex (`session_id` header, with an underscore) keeps its session too, before prompt_cache_key', async () => {
    const older = (n: number, cacheKey: string) =>
      post('/v1/responses', { store: false, prompt_cache_key: cacheKey, input: `turn ${n}` }, { session_id: '0199-older-codex' });
    const turns: Turn[] = [];
    for (let i = 0; i < 4; i++) turns.push(await older(i, `pck-${i}`));
    allOk(turns);
    assert.deepEqual(
      turns.map((t) => t.sticky),
      ['new', 'pinned', 'pinned', 'pinned'],
    );
  });

  test('the same session id under two client keys is two sessions', async () => {
    for (const [turn, id] of [
      [(key: string) => claudeTurn('shared-cc-session', key), 'claude'],
      [(key: string) => codexTurn('shared-codex-session', 0, key), 'codex'],
    ] as const) {
      const a = await turn(CLIENT_KEY);
      const b = await turn(OTHER_KEY);
      allOk([a, b]);
      assert.deepEqual([a.sticky, b.sticky], ['new', 'new'], `${id}: the second key's first turn starts its own session`);
      // Each then stays on its own account.
      for (let i = 0; i < 3; i++) {
        const [a2, b2] = [await turn(CLIENT_KEY), await turn(OTHER_KEY)];
        assert.deepEqual([a2.sticky, a2.upstream], ['pinned', a.upstream], `${id}: key A stays`);
        assert.deepEqual([b2.sticky, b2.upstream], ['pinned', b.upstream], `${id}: key B stays`);
      }
    }
  });

  test('a Responses follow-up (previous_response_id) is in the session of the response it continues, for the key that made it', async () => {
    // The session `chain-1` is pinned by a chat call; a warmup in it is journalled with no
    // account, so the follow-up is routed by its session alone.
    const first = await chat(gw, {}, { 'x-session-id': 'chain-1' });
    assert.equal(first.headers.get('x-switchyard-sticky'), 'new');
    const warm = await post('/v1/responses', { generate: false, input: 'warm up' }, { 'x-session-id': 'chain-1' });
    assert.equal(warm.status, 200);
    const id = warm.json['id'] as string;
    const follow = await post('/v1/responses', { previous_response_id: id, input: 'go on' }, {});
    assert.equal(follow.status, 200, JSON.stringify(follow.json));
    assert.deepEqual([follow.sticky, follow.upstream], ['pinned', first.upstream]);
    // Its own answer carries the session on: the next follow-up (pinned to its owner) and a
    // later call with the session's own header agree.
    const next = await post('/v1/responses', { previous_response_id: follow.json['id'], input: 'and on' }, {});
    assert.deepEqual([next.status, next.upstream], [200, first.upstream]);
    // Another key continuing the same warmup is not in key A's session.
    const other = await post('/v1/responses', { previous_response_id: id, input: 'go on' }, {}, OTHER_KEY);
    assert.deepEqual([other.status, other.sticky], [200, 'new']);
  });
});

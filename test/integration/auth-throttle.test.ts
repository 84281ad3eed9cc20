/**
 * The client port's bad-key throttle: a wrong key is throttled on its own, an address only
 * for keys that never worked, and a valid key is never refused because another key failed
 * (issue 14: ten requests with one stale key used to lock the whole address out for 60 s).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { RateLimitError } from 'openai';
import { CLIENT_KEY, closeAll, OTHER_KEY, startWithUpstream, testConfigYaml, type GatewayWithUpstream } from '../helpers/gateway.js';

const models = (url: string, key: string) => fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });

async function status(res: Promise<Response>): Promise<number> {
  const r = await res;
  await r.arrayBuffer();
  return r.status;
}

describe('bad-key throttle on the client port', () => {
  let g: GatewayWithUpstream | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    await closeAll(g?.gw, g?.upstream);
    g = undefined;
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  test('one wrong key sent 10 times is refused on its own; a valid key from the same address still works', async () => {
    g = await startWithUpstream();
    const url = g.gw.url;
    for (let i = 0; i < 10; i++) assert.equal(await status(models(url, 'sk-stale-agent-key')), 401, `attempt ${i + 1}`);
    const held = await models(url, 'sk-stale-agent-key');
    assert.equal(held.status, 429);
    assert.equal(held.headers.get('x-should-retry'), 'false', 'retrying cannot fix a key, so SDKs are told not to');
    assert.ok(Number(held.headers.get('retry-after')) >= 1);
    const body = (await held.json()) as { error: { message: string } };
    assert.match(body.error.message, /not a valid key/);
    assert.equal(await status(models(url, CLIENT_KEY)), 200, 'the valid key from the same address is not affected');
    assert.equal(await status(models(url, OTHER_KEY)), 200);
    // The SDK sees a RateLimitError and does not retry into it (x-should-retry: false).
    const err = await g.gw
      .client({ apiKey: 'sk-stale-agent-key', maxRetries: 3 })
      .models.list()
      .catch((e: unknown) => e);
    assert.ok(err instanceof RateLimitError, String(err));
    const before = Number(/switchyard_auth_throttled_total (\d+)/.exec(await g.gw.metricsText())?.[1]);
    assert.equal(before, 2, 'one refusal each for the raw call and the SDK call: the SDK did not retry');
  });

  test('an address that sends 10 different never-valid keys is held back for unknown keys only', async () => {
    g = await startWithUpstream();
    const url = g.gw.url;
    for (let i = 0; i < 10; i++) assert.equal(await status(models(url, `sk-guess-${i}`)), 401);
    const guess = await models(url, 'sk-guess-next');
    assert.equal(guess.status, 429);
    assert.match(((await guess.json()) as { error: { message: string } }).error.message, /valid keys are not affected/);
    assert.equal(await status(models(url, CLIENT_KEY)), 200);
    // Claude Code's SDK on the Messages route: a valid x-api-key is served too.
    const claude = new Anthropic({ apiKey: CLIENT_KEY, baseURL: url, maxRetries: 0 });
    const count = await claude.messages.countTokens({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    assert.ok(count.input_tokens > 0);
  });

  test('a key rotated out of the config is a stale key: its failures never count against the address', async () => {
    g = await startWithUpstream();
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-auth-'));
    dirs.push(dir);
    const path = join(dir, 'config.yaml');
    // The reloaded config keeps team-a and drops team-limited (OTHER_KEY).
    writeFileSync(path, testConfigYaml(g.upstream.url).replace(/ {2}- name: team-limited[\s\S]*$/, ''));
    assert.equal(await status(models(g.gw.url, OTHER_KEY)), 200);
    g.gw.reload(path);
    for (let i = 0; i < 12; i++) await status(models(g.gw.url, OTHER_KEY));
    assert.equal(await status(models(g.gw.url, OTHER_KEY)), 429, 'the stale key is throttled on its own');
    assert.equal(await status(models(g.gw.url, 'sk-first-typo')), 401, 'an unknown key from the same address is only refused, not throttled');
    assert.equal(await status(models(g.gw.url, CLIENT_KEY)), 200);
  });

  test('a request without a key on the Messages route is told to send x-api-key', async () => {
    g = await startWithUpstream();
    const r = await fetch(`${g.gw.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(r.status, 401);
    const body = (await r.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error', 'the Anthropic error shape');
    assert.equal(body.error.type, 'authentication_error');
    assert.match(body.error.message, /x-api-key/);
  });
});

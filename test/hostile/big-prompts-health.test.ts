/**
 * Big prompts arriving do not stop the gateway answering (issue 30): two 24 MB prompts on a
 * key with a `tpm` limit are each relayed intact to the upstream, and /healthz answers while
 * they are in. How fast it answers is measured by `npm run bench:big-prompts`
 * (docs/reliability.md), not asserted here.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { closeAll, startWithUpstream, testConfigYaml, type GatewayWithUpstream } from '../helpers/gateway.js';

const TPM_KEY = 'sk-test-tpm-hostile-0123456789abcdef';
const MB = 1024 * 1024;

describe('big prompts and /healthz', () => {
  let g: GatewayWithUpstream;
  const received: { messages: { content: string }[]; keys: string[] }[] = [];
  const messages: { role: string; content: string }[] = [];
  for (let n = 0, i = 0; n < 24 * MB; i++) {
    const content = `m${i} ${'lorem ipsum dolor sit amet '.repeat(600)}`;
    messages.push({ role: i % 2 ? 'assistant' : 'user', content });
    n += content.length + 40;
  }
  const body = JSON.stringify({ model: 'gpt-test', temperature: 0.5, messages });

  before(async () => {
    g = await startWithUpstream(
      (url) => `${testConfigYaml(url)}  - name: team-tpm\n    key_sha256: ${hashKey(TPM_KEY)}\n    models: ["*"]\n    limits: { tpm: 1000000000 }\n`,
    );
    g.upstream.on((req) => {
      received.push({ messages: req.json?.['messages'] as { content: string }[], keys: Object.keys(req.json ?? {}) });
      return {
        status: 200,
        body: {
          id: 'c',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        },
      };
    });
  });
  after(() => closeAll(g?.gw, g?.upstream));

  test('two 24 MB prompts are served whole while /healthz keeps answering', async () => {
    let inFlight = true;
    const health: number[] = [];
    const poll = (async () => {
      while (inFlight) {
        const r = await fetch(`${g.gw.url}/healthz`);
        await r.arrayBuffer();
        health.push(r.status);
        await new Promise((res) => setTimeout(res, 10));
      }
    })();
    const send = () =>
      fetch(`${g.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TPM_KEY}`, 'content-type': 'application/json' },
        body,
      }).then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      });
    const statuses = await Promise.all([send(), send()]);
    inFlight = false;
    await poll;
    assert.deepEqual(statuses, [200, 200]);
    assert.equal(received.length, 2);
    // Each prompt is written out in pieces (upstream/encode-json.ts): every message arrives as sent.
    for (const r of received) assert.deepEqual(r.messages, messages);
    assert.ok(health.length >= 2, `healthz answered ${health.length} times`);
    assert.ok(health.every((s) => s === 200));
  });
});

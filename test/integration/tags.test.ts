/**
 * Request tags outside the ledger: tags read from configured headers (the way Claude Code
 * and the Codex CLI send their session ids) land on the `request finished` log line, and
 * only the tags listed in `tags.metric_labels` become metric series, capped per tag at
 * `tags.metric_max_values` values (later values count as "other"), with spend that adds up
 * to the key's spend counter.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, finishedLine, startGateway, testConfigYaml, type TestGateway } from '../helpers/gateway.js';
import { script } from '../helpers/ledger.js';
import { metricSum } from '../helpers/metrics-text.js';

const TAGS = `
tags:
  headers: { session: [x-claude-code-session-id, session-id] }
  metric_labels: [repo]
  metric_max_values: 2
`;

describe('request tags: configured headers and metric labels', () => {
  const fake = new FakeUpstream();
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    await fake.start();
    fake.on(script);
    gw = await startGateway(testConfigYaml(fake.url) + TAGS);
    client = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const chat = (headers: Record<string, string>) =>
    client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }, { headers }).withResponse();

  test('a session header becomes the session tag on the log line; explicit tags win', async () => {
    const a = await chat({ 'x-claude-code-session-id': 'cc-5b1f', 'session-id': 'codex-1' });
    const b = await chat({ 'session-id': 'codex-77' });
    const c = await chat({ 'session-id': 'codex-77', 'x-switchyard-tags': 'session=mine,repo=api' });
    const line = async (r: typeof a) => finishedLine(gw, r.response.headers.get('x-request-id')!);
    assert.deepEqual((await line(a))['tags'], { session: 'cc-5b1f' });
    assert.deepEqual((await line(b))['tags'], { session: 'codex-77' });
    assert.deepEqual((await line(c))['tags'], { session: 'mine', repo: 'api' });
  });

  test('only listed tags are metric labels, at most metric_max_values values each', async () => {
    const before = await gw.metricsText();
    const base = (v: string) => metricSum(before, 'switchyard_tag_requests_total', { tag: 'repo', value: v });
    const apiBefore = base('api');
    for (const repo of ['api', 'web', 'api', 'docs', 'infra']) await chat({ 'x-switchyard-tags': `repo=${repo},dev=ana` });
    const text = await gw.metricsText();
    assert.equal(metricSum(text, 'switchyard_tag_requests_total', { tag: 'repo', value: 'api' }) - apiBefore, 2);
    assert.equal(metricSum(text, 'switchyard_tag_requests_total', { tag: 'repo', value: 'web' }), 1);
    assert.equal(metricSum(text, 'switchyard_tag_requests_total', { tag: 'repo', value: 'other' }), 2, 'docs and infra are past the cap of 2 values');
    assert.ok(!text.includes('value="docs"'), 'no series for a value past the cap');
    assert.ok(!/switchyard_tag_[a-z_]+\{[^}]*tag="(dev|session)"/.test(text), 'unlisted tags are never labels');
    const tagSpend = metricSum(text, 'switchyard_tag_spend_usd_total', { tag: 'repo' });
    const keySpend = metricSum(text, 'switchyard_spend_usd_total', { key: 'team-a' });
    // Every request but the two session-only ones in the first test carried a repo tag.
    const perRequest = keySpend / 8;
    assert.ok(perRequest > 0);
    assert.ok(Math.abs(tagSpend - 6 * perRequest) < 1e-12, `tag spend ${tagSpend} vs ${6 * perRequest}`);
  });
});

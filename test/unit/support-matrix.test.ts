/**
 * The support matrix in docs/translation.md is the one in the code: the table between the
 * `support-matrix` markers is rendered here from `TRANSLATORS` (translate/table.ts) and must
 * match byte for byte; and each provider kind speaks the wire APIs docs/api.md says.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { API_NAMES, type ApiName } from '../../src/apis/names.js';
import { APIS } from '../../src/apis/index.js';
import type { LiveUpstream } from '../../src/config/load.js';
import { PROVIDERS } from '../../src/providers/registry.js';
import { supportedPairs, TRANSLATORS, wireFor } from '../../src/translate/table.js';

/** The docs' matrix, rendered from the table. */
function render(): string {
  const rows = [`| client API \\ wire API | ${API_NAMES.map((w) => `\`${w}\``).join(' | ')} |`, `|---|${API_NAMES.map(() => '---|').join('')}`];
  for (const client of API_NAMES) {
    const cells = API_NAMES.map((wire) => (TRANSLATORS[client][wire] ? (client === wire ? 'passthrough' : 'translated') : '–'));
    rows.push(`| \`POST ${APIS[client].path}\` | ${cells.join(' | ')} |`);
  }
  return rows.join('\n');
}

function docsMatrix(): string {
  const text = readFileSync(new URL('../../../docs/translation.md', import.meta.url), 'utf8');
  const m = /<!-- support-matrix:start -->\n([\s\S]*?)\n<!-- support-matrix:end -->/.exec(text);
  assert.ok(m, 'docs/translation.md has the support-matrix markers');
  return m[1]!;
}

describe('support matrix', () => {
  test('the docs table is the code table', () => {
    assert.equal(docsMatrix(), render(), `docs/translation.md's support matrix should read:\n${render()}`);
  });

  test('every pair has a translator that says which pair it is', () => {
    for (const { client, wire } of supportedPairs()) {
      const tr = TRANSLATORS[client][wire]!({ stream: false, wantsUsage: false, secrets: [], retryAfterCapMs: 10_000, options: {} });
      assert.deepEqual([tr.client, tr.wire], [client, wire]);
    }
  });

  test('a client API is served over its own wire API first', () => {
    for (const api of API_NAMES) assert.equal(wireFor(api, new Set<ApiName>(API_NAMES)), api);
    assert.equal(wireFor('chat', new Set<ApiName>(['messages'])), 'messages');
    assert.equal(wireFor('messages', new Set<ApiName>(['chat'])), 'chat');
    assert.equal(wireFor('responses', new Set<ApiName>(['chat'])), 'chat');
    assert.equal(wireFor('messages', new Set<ApiName>(['responses'])), 'responses');
    assert.equal(wireFor('messages', new Set<ApiName>(['chat', 'responses'])), 'chat');
  });

  test('each provider kind speaks the wire APIs docs/api.md lists', async () => {
    const upstream = (provider: string, options: Record<string, unknown>) =>
      ({
        id: `u-${provider}`,
        provider,
        base_url: 'http://127.0.0.1:9/v1',
        apiKey: 'k',
        max_concurrency: 1,
        timeouts: { connect_ms: 10, first_byte_ms: 10, idle_ms: 10 },
        headers: {},
        options,
        simulator: { chunk_delay_ms: 0, first_byte_delay_ms: 0, seed: 1, throttle: { enabled: false } },
      }) as unknown as LiveUpstream;
    const cases: [string, Record<string, unknown>, ApiName[]][] = [
      ['openai-compatible', {}, ['chat']],
      ['openai-compatible', { responses: true }, ['chat', 'responses']],
      ['openai-compatible', { chat: false }, ['responses']],
      ['azure-openai', { api_version: '2024-10-21' }, ['chat']],
      ['azure-openai', { api_version: '2024-10-21', responses: true }, ['chat', 'responses']],
      ['anthropic', {}, ['messages']],
      ['simulator', {}, ['chat']],
    ];
    for (const [kind, options, wires] of cases) {
      const p = PROVIDERS[kind]!.create(upstream(kind, options));
      try {
        assert.deepEqual([...p.wireApis].sort(), wires, `${kind} ${JSON.stringify(options)}`);
      } finally {
        await p.close();
      }
    }
  });
});

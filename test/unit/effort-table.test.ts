/**
 * The reasoning-effort table (src/apis/effort.ts): its levels are the ones routing ranks,
 * each level's budget reads back as that level, budgets are fitted to Anthropic's minimum
 * (1,024 tokens, and below `max_tokens`), both bridge directions read it, and the table in
 * docs/translation.md (between the `effort-table` markers) is rendered from it byte for byte.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  DEFAULT_THINKING_BUDGETS,
  EFFORT_ORDER,
  EFFORT_TABLE,
  effortFor,
  fitThinking,
  levelOfBudget,
  MIN_THINKING_BUDGET,
  thinkingBudgetOf,
} from '../../src/apis/effort.js';
import { messagesApi } from '../../src/apis/messages.js';
import { DEEPER_EFFORTS, EFFORT_LEVELS } from '../../src/config/schema-model.js';
import { effortRank } from '../../src/router/deep.js';
import { resolveAnthropicOptions } from '../../src/providers/anthropic/options.js';

const code = (s: string | null): string => (s === null ? '—' : `\`${s}\``);

/** The docs' table, rendered from EFFORT_TABLE. */
function render(): string {
  const rows = [
    '| level | Anthropic `thinking.budget_tokens` | Anthropic `output_config.effort` | chat `reasoning_effort` | Responses `reasoning.effort` | Gemini (OpenAI-compatible endpoint) |',
    '|---|---|---|---|---|---|',
  ];
  for (const r of EFFORT_TABLE) {
    const budget =
      r.budgetLevel === null ? '— (no thinking)' : r.budget !== null ? String(r.budget) : `${DEFAULT_THINKING_BUDGETS[r.budgetLevel]} (\`${r.budgetLevel}\`'s)`;
    rows.push(`| \`${r.level}\` | ${budget} | ${code(r.anthropicEffort)} | ${code(r.chat)} | ${code(r.responses)} | ${r.gemini} |`);
  }
  return rows.join('\n');
}

function docsTable(): string {
  const text = readFileSync(new URL('../../../docs/translation.md', import.meta.url), 'utf8');
  const m = /<!-- effort-table:start -->\n([\s\S]*?)\n<!-- effort-table:end -->/.exec(text);
  assert.ok(m, 'docs/translation.md has the effort-table markers');
  return m[1]!;
}

describe('effort table', () => {
  test('the docs table is the code table', () => {
    assert.equal(docsTable(), render(), `docs/translation.md's effort table should read:\n${render()}`);
  });

  test('its levels are the ones the config and routing know, in their order', () => {
    assert.deepEqual(
      EFFORT_TABLE.map((r) => r.level),
      EFFORT_ORDER,
    );
    assert.deepEqual(EFFORT_ORDER, ['none', ...EFFORT_LEVELS, ...DEEPER_EFFORTS]);
    for (let i = 1; i < EFFORT_ORDER.length; i++) assert.ok(effortRank(EFFORT_ORDER[i]!)! > effortRank(EFFORT_ORDER[i - 1]!)!, EFFORT_ORDER[i]);
  });

  test('budgets rise with the level, none is below the minimum, and the anthropic options default to them', () => {
    const own = EFFORT_TABLE.filter((r) => r.budget !== null).map((r) => r.budget!);
    assert.ok(own.every((b, i) => b >= MIN_THINKING_BUDGET && (i === 0 || b > own[i - 1]!)));
    assert.deepEqual(resolveAnthropicOptions({}).thinking_budgets, DEFAULT_THINKING_BUDGETS);
    assert.equal(thinkingBudgetOf('none'), undefined);
    assert.equal(thinkingBudgetOf('extreme'), undefined);
    assert.equal(thinkingBudgetOf('max'), DEFAULT_THINKING_BUDGETS.xhigh);
    assert.equal(thinkingBudgetOf('HIGH'), 16384);
  });

  test('round trips: a level -> its budget -> the same level; a budget reads as the nearest level', () => {
    for (const r of EFFORT_TABLE) if (r.budget !== null) assert.equal(levelOfBudget(thinkingBudgetOf(r.level)!), r.level);
    assert.equal(levelOfBudget(0), 'minimal');
    assert.equal(levelOfBudget(1500), 'low');
    assert.equal(levelOfBudget(4096), 'low', 'a tie (geometric mean of 2048 and 8192) goes to the lower level');
    assert.equal(levelOfBudget(10_000), 'medium');
    assert.equal(levelOfBudget(12_000), 'high');
    assert.equal(levelOfBudget(63_999), 'xhigh');
    // and back across the bridge: a budget -> the level -> what each wire is sent
    assert.deepEqual(
      [1024, 2048, 8192, 16384, 32000].map((b) => effortFor(levelOfBudget(b), 'chat')),
      ['minimal', 'low', 'medium', 'high', 'high'],
    );
  });

  test('a budget below the minimum is raised to it, and max_tokens above it', () => {
    assert.deepEqual(fitThinking(99, 100), { budget: 1024, maxTokens: 1025 });
    assert.deepEqual(fitThinking(1024, 1024), { budget: 1024, maxTokens: 1025 });
    assert.deepEqual(fitThinking(4999, 5000), { budget: 4999, maxTokens: 5000 });
    assert.deepEqual(fitThinking(16384, 30000), { budget: 16384, maxTokens: 30000 });
  });

  test('each wire: deeper levels as the deepest it takes; none and unknown words left out where there is no word', () => {
    assert.deepEqual(
      EFFORT_ORDER.map((l) => effortFor(l, 'chat')),
      [undefined, 'minimal', 'low', 'medium', 'high', 'high', 'high', 'high'],
    );
    assert.deepEqual(
      EFFORT_ORDER.map((l) => effortFor(l, 'responses')),
      ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'xhigh', 'xhigh'],
    );
    assert.deepEqual(
      EFFORT_ORDER.map((l) => effortFor(l, 'anthropic')),
      [undefined, 'low', 'low', 'medium', 'high', 'high', 'max', 'max'],
    );
    for (const wire of ['chat', 'responses', 'anthropic'] as const) assert.equal(effortFor('extreme', wire), undefined);
  });

  test("a Messages client's budget reads as the table's level (deep-call detection, bridges)", () => {
    const at = (budget_tokens: number) => messagesApi.effort({ thinking: { type: 'enabled', budget_tokens } });
    assert.deepEqual([1024, 2048, 8192, 16384, 32000, 10_000].map(at), ['minimal', 'low', 'medium', 'high', 'xhigh', 'medium']);
  });
});

/**
 * The `budgets:` and `budget_alerts:` config sections: what loads (defaults, sorted
 * thresholds, `${VAR}` headers), and what is refused with a message naming the budget (an
 * unknown upstream, no scope or two, a duplicate or reserved name), with no secret quoted.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { ConfigError } from '../../src/config/load.js';
import { parseTestConfig } from '../helpers/config.js';

const HASH = hashKey('sk-budgets-config-0123456789');

function doc(budgets: string, alerts = ''): string {
  return `
upstreams:
  - { id: up, provider: openai-compatible, base_url: "http://127.0.0.1:9/v1", api_key: "\${UP_KEY}" }
  - { id: off, provider: openai-compatible, base_url: "http://127.0.0.1:9/v1", api_key: "\${OFF_KEY}" }
models:
  - { name: m1, price: { input: 1, output: 2 }, targets: [{ upstream: up, model: real-m1 }] }
keys:
  - { name: k, key_sha256: ${HASH} }
budgets:
${budgets}
${alerts}`;
}

function configError(yaml: string, env: NodeJS.ProcessEnv = { UP_KEY: 'x' }): string {
  try {
    parseTestConfig(yaml, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message;
  }
  assert.fail('expected a ConfigError');
}

describe('config: budgets and budget_alerts', () => {
  test('tag and account budgets load; alerts get their defaults and sorted thresholds', () => {
    const c = parseTestConfig(
      doc(
        `  - { name: search, amount_usd: 50, period: month, tag: { team: search, repo: api } }
  - { name: credits, amount_usd: 1000, period: day, upstream: off }`,
        `budget_alerts:
  url: "https://hooks.example.com/x?token=\${HOOK_TOKEN}"
  thresholds: [1.0, 0.25, 0.9]
  headers: { authorization: "Bearer \${HOOK_TOKEN}" }`,
      ),
      { UP_KEY: 'x', HOOK_TOKEN: 'hook-secret' },
    );
    assert.deepEqual(
      c.budgets.map((b) => ({ ...b })),
      [
        { name: 'search', amount_usd: 50, period: 'month', tag: { team: 'search', repo: 'api' } },
        // An upstream that is off (its key unset) may carry a budget.
        { name: 'credits', amount_usd: 1000, period: 'day', upstream: 'off' },
      ],
    );
    assert.deepEqual([...c.budgetAlerts!.thresholds], [0.25, 0.9, 1]);
    assert.equal(c.budgetAlerts!.headers['authorization'], 'Bearer hook-secret');
    assert.equal(c.budgetAlerts!.timeout_ms, 5000);
    assert.equal(c.budgetAlerts!.retries, 3);
    const d = parseTestConfig(doc('  []', 'budget_alerts: { url: "http://127.0.0.1:1/hook" }'), { UP_KEY: 'x' });
    assert.deepEqual([...d.budgetAlerts!.thresholds], [0.5, 0.8, 1]);
    assert.equal(parseTestConfig(doc('  []'), { UP_KEY: 'x' }).budgetAlerts, null);
  });

  test('an unknown upstream is refused, naming the budget and the upstream', () => {
    const msg = configError(doc('  - { name: credits, amount_usd: 10, period: month, upstream: nope }'));
    assert.match(msg, /\/budgets\/0\/upstream: budget "credits" names unknown upstream "nope" \(declared: up, off\)/);
  });

  test('an infinite or NaN amount, price or threshold (YAML .inf, .nan) is refused, naming the path', () => {
    const msg = configError(
      doc(
        '  - { name: search, amount_usd: .inf, period: month, tag: { team: search } }',
        'budget_alerts: { url: "https://h.example.com/x", thresholds: [.nan] }',
      ),
    );
    assert.match(msg, /\/budgets\/0\/amount_usd: must be a finite number \(got \.inf\)/);
    assert.match(msg, /\/budget_alerts\/thresholds\/0: must be a finite number \(got \.nan\)/);
    const price = configError(doc('  - { name: search, amount_usd: 5, period: month, tag: { team: search } }').replace('input: 1,', 'input: -.inf,'));
    assert.match(price, /\/models\/0\/price\/input: must be a finite number \(got -\.inf\)/);
  });

  test('a budget needs exactly one scope, a unique name and no key: prefix', () => {
    assert.match(configError(doc('  - { name: loose, amount_usd: 10, period: month }')), /\/budgets\/0: budget "loose" needs exactly one scope/);
    assert.match(
      configError(doc('  - { name: both, amount_usd: 10, period: month, upstream: up, tag: { team: a } }')),
      /budget "both" needs exactly one scope/,
    );
    assert.match(
      configError(doc('  - { name: twice, amount_usd: 1, period: day, upstream: up }\n  - { name: twice, amount_usd: 2, period: day, tag: { team: a } }')),
      /\/budgets\/1\/name: duplicate budget name "twice"/,
    );
    assert.match(configError(doc('  - { name: "key:k", amount_usd: 1, period: day, upstream: up }')), /budget "key:k": names starting with "key:"/);
    assert.match(configError(doc('  - { name: weekly, amount_usd: 1, period: week, upstream: up }')), /\/budgets\/0\/period/);
    assert.match(configError(doc('  - { name: neg, amount_usd: 0, period: day, upstream: up }')), /\/budgets\/0\/amount_usd/);
    // Tag names as the tags themselves are written: a capital never matches, so it is refused.
    assert.match(configError(doc('  - { name: caps, amount_usd: 1, period: day, tag: { Team: search } }')), /\/budgets\/0\/tag: unknown field "Team"/);
    assert.match(configError(doc('  - { name: empty, amount_usd: 1, period: day, tag: {} }')), /\/budgets\/0\/tag/);
  });

  test('alert settings are checked without quoting the webhook URL; a literal token header is warned about', () => {
    const msg = configError(doc('  []', 'budget_alerts: { url: "ftp://hooks.example.com/secret-path" }'));
    assert.match(msg, /\/budget_alerts\/url: .*\[redacted\]/);
    assert.ok(!msg.includes('secret-path'), msg);
    assert.match(configError(doc('  []', 'budget_alerts: { url: "http://h/x", thresholds: [0] }')), /\/budget_alerts\/thresholds\/0/);
    assert.match(
      configError(doc('  []', 'budget_alerts: { url: "http://h/x", headers: { authorization: "${MISSING}" } }')),
      /environment variable MISSING is not set/,
    );
    const c = parseTestConfig(doc('  []', 'budget_alerts: { url: "http://h/x", headers: { authorization: "Bearer literal-token", x-team: search } }'), {
      UP_KEY: 'x',
    });
    const warned = c.warnings.filter((w) => w.startsWith('/budget_alerts/headers/'));
    assert.equal(warned.length, 1, JSON.stringify(c.warnings));
    assert.match(warned[0]!, /authorization is written into the config file/);
    assert.ok(!warned[0]!.includes('literal-token'));
  });
});

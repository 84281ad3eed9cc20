/**
 * The nesting cap of model-call bodies (apis/nesting.ts): checked without recursion, so a
 * body nested 100,000 deep is refused with a 400 naming the cap instead of overflowing a
 * recursive walk or `JSON.stringify` later; a wide body lets the event loop run.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkNesting, MAX_NESTING } from '../../src/apis/nesting.js';
import { GatewayError } from '../../src/errors/codes.js';

/** `levels` levels of nesting: the body object, then arrays. */
function nested(levels: number): Record<string, unknown> {
  let v: unknown = 'leaf';
  for (let i = 1; i < levels; i++) v = [v];
  return { model: 'm', messages: v };
}

describe('checkNesting', () => {
  test('a body at the cap passes; one level more is a 400 naming the cap', async () => {
    await checkNesting(nested(MAX_NESTING));
    const err = await checkNesting(nested(MAX_NESTING + 1)).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof GatewayError, String(err));
    assert.equal(err.status, 400);
    assert.match(err.message, new RegExp(`more than ${MAX_NESTING} levels`));
  });

  test('5,000 and 100,000 levels are refused, not a stack overflow', async () => {
    for (const levels of [5000, 100_000]) {
      const err = await checkNesting(nested(levels)).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof GatewayError && err.status === 400, `${levels}: ${String(err)}`);
    }
  });

  test('a body of 300,000 small objects passes and lets timers run while it is checked', async () => {
    const body = { model: 'm', rows: Array.from({ length: 300_000 }, (_, i) => ({ i })) };
    let turns = 0;
    const tick = setInterval(() => turns++, 1);
    try {
      await checkNesting(body);
    } finally {
      clearInterval(tick);
    }
    assert.ok(turns > 0, 'timers ran during the check');
  });

  test('scalars and empty containers pass', async () => {
    for (const v of [null, 3, 'x', {}, []]) await checkNesting(v);
  });
});

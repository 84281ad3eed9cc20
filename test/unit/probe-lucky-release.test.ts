/**
 * A probe's release (router/attempt.ts) waits for its on-time report (router/feedback.ts
 * `answered`): when the store calls the probe lucky (another call freed a place as it went,
 * store/probe-gate.ts), the success is counted one deep call lower, so it is no evidence that
 * the raised level is served and a throttle there cuts; a probe that was not lucky is.
 * Runs the router's attempt against the real memory store.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseConfig, type Target } from '../../src/config/load.js';
import { makeAttempt } from '../../src/router/attempt.js';
import { SlotQueue } from '../../src/router/concurrency.js';
import { answered } from '../../src/router/feedback.js';
import type { RouterState } from '../../src/router/state.js';
import { StallDetector } from '../../src/router/stalls.js';
import { PROBE_BASE_MS } from '../../src/store/capacity.js';
import { MemoryStore } from '../../src/store/memory.js';
import { PROBE_LUCK_MS } from '../../src/store/probe-gate.js';
import type { RouterSlots } from '../../src/store/roles.js';
import type { Lease } from '../../src/store/types.js';
import { mini } from '../helpers/config-fixtures.js';
import { slotOf } from '../helpers/store-contract.js';

const UPSTREAM = `  - id: up
    provider: openai-compatible
    base_url: http://127.0.0.1:9/v1
    api_key: \${UP_KEY}
    max_concurrency: 40
    capacity: { start: 4, ceiling: 40 }`;
const MODELS = `  - name: m1
    price: { input: 1, output: 2 }
    targets:
      - { upstream: up, model: real-m1 }`;

/** The learned limit of `up` after a probe's success, then a throttle at the probe's place (5). */
async function limitAfterProbe(lucky: boolean): Promise<number> {
  const config = parseConfig(mini({ upstream: UPSTREAM, models: MODELS }), { kinds: { 'openai-compatible': { needsBaseUrl: true } }, env: { UP_KEY: 'k' } });
  const model = config.models.get('m1')!;
  const target: Target = model.targets[0]!;
  const store = new MemoryStore(30_000);
  // The router's store role, served here by the memory store alone (the calls used: admit, release, answered, setPin).
  const slots = store as unknown as RouterSlots;
  const queue = new SlotQueue(slots, 10, 1_000);
  const state = { store: slots, stalls: new StallDetector() } as unknown as RouterState;
  const deep = slotOf(target, true);
  const held: Lease[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await store.acquire(deep);
    assert.ok(r.ok);
    held.push(r.lease);
  }
  const bounds = target.upstream.bounds;
  await store.feedback('up', { signal: 'ok', inFlight: 4 }, bounds);
  await sleep(PROBE_BASE_MS + 100);
  await store.feedback('up', { signal: 'ok', inFlight: 4 }, bounds);
  const got = await store.acquire(deep);
  assert.ok(got.ok && got.lease.probe, 'the fifth place is the probe of the raised limit');
  const attempt = makeAttempt({ target, lease: got.lease, queuedMs: 0 }, { model, number: 1, deep: true }, { store: slots, queue });
  if (!lucky) await sleep(PROBE_LUCK_MS + 30);
  // Another call of the account ends: at once after the probe went (lucky), or after the luck window.
  await store.release(held.shift()!);
  answered(state, attempt, 300);
  await attempt.release();
  await store.feedback('up', { signal: 'throttled', inFlight: 5 }, bounds);
  return (await store.view([{ key: target.key, upstream: 'up', capacity: bounds, calls: target.upstream.callBounds }]))[0]!.limit;
}

test('a lucky probe served at place 5 is counted at 4: a throttle at 5 then cuts the raised limit (6) to 4', async () => {
  assert.equal(await limitAfterProbe(true), 4);
});

test('a probe that was not lucky is counted at 5: a throttle there right after is not a concurrency limit (the limit stays 6)', async () => {
  assert.equal(await limitAfterProbe(false), 6);
});

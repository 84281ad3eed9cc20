/**
 * The router's concurrency gates and queue (SlotQueue) over the memory store: slots up to
 * the limit, FIFO waiters, a full queue, timeouts and aborted waits.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { QueueFullError, SlotQueue } from '../../src/router/concurrency.js';
import { StateStore } from '../../src/store/index.js';

const quiet = { info: () => {}, warn: () => {} };

describe('SlotQueue over the memory store', () => {
  const never = () => new AbortController().signal;
  const req = (limit: number) => ({
    upstream: 'u',
    key: 'u/m',
    coolingOk: true,
    limit,
    deep: false,
    capacity: { start: 6, min: 1, ceiling: 64 },
    calls: { start: limit, min: 1, ceiling: limit },
  });
  const setup = (queueMax: number, timeoutMs: number) => {
    const store = new StateStore(
      { redis_options: {}, cluster_nodes: [], key_prefix: 'sy', command_timeout_ms: 250, replicas: 1, lease_ms: 60_000, journal_ttl_ms: 60_000 },
      quiet,
    );
    return { store, q: new SlotQueue(store, queueMax, timeoutMs, 5) };
  };

  test('the store takes slots up to the limit; release gives them back, never below zero', async () => {
    const { store } = setup(4, 1_000);
    const a = await store.acquire(req(2));
    const b = await store.acquire(req(2));
    assert.ok(a.ok && b.ok);
    assert.deepEqual(await store.acquire(req(2)), { ok: false, reason: 'full' });
    assert.equal(
      (await store.view([{ key: 'u/m', upstream: 'u', capacity: { start: 6, min: 1, ceiling: 64 }, calls: { start: 64, min: 1, ceiling: 64 } }]))[0]!.inFlight,
      2,
    );
    await store.release(a.lease);
    await store.release(a.lease);
    assert.equal(
      (await store.view([{ key: 'u/m', upstream: 'u', capacity: { start: 6, min: 1, ceiling: 64 }, calls: { start: 64, min: 1, ceiling: 64 } }]))[0]!.inFlight,
      1,
      'release is idempotent',
    );
    await store.release(b.lease);
    assert.equal(
      (await store.view([{ key: 'u/m', upstream: 'u', capacity: { start: 6, min: 1, ceiling: 64 }, calls: { start: 64, min: 1, ceiling: 64 } }]))[0]!.inFlight,
      0,
    );
  });

  test('waiters get released slots in FIFO order', async () => {
    const { store, q } = setup(10, 5_000);
    const first = await store.acquire(req(1));
    assert.ok(first.ok);
    const order: string[] = [];
    const leases: Record<string, import('../../src/store/types.js').Lease> = {};
    const waits = ['A', 'B', 'C'].map((name) =>
      q.wait(req(1), never()).then((r) => {
        order.push(name);
        leases[name] = r.lease;
      }),
    );
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(q.queued('u'), 3);
    assert.deepEqual(order, [], 'nobody gets a slot before a release');
    await store.release(first.lease);
    q.notify('u');
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(order, ['A']);
    await store.release(leases['A']!);
    q.notify('u');
    await new Promise((r) => setTimeout(r, 30));
    await store.release(leases['B']!);
    q.notify('u');
    await Promise.all(waits);
    assert.deepEqual(order, ['A', 'B', 'C']);
    assert.equal(q.queued('u'), 0);
  });

  test('a full queue refuses at once; a wait past the timeout fails', async () => {
    const { store, q } = setup(1, 80);
    assert.ok((await store.acquire(req(1))).ok);
    const waiting = q.wait(req(1), never());
    await assert.rejects(q.wait(req(1), never()), (e: unknown) => e instanceof QueueFullError && e.reason === 'full');
    const t0 = Date.now();
    await assert.rejects(waiting, (e: unknown) => e instanceof QueueFullError && e.reason === 'timeout');
    assert.ok(Date.now() - t0 < 1000);
    assert.equal(q.queued('u'), 0, 'the timed-out waiter left the line');
  });

  test('an aborted wait leaves the line with the abort reason; an already-aborted signal is refused at once', async () => {
    const { store, q } = setup(4, 5_000);
    assert.ok((await store.acquire(req(1))).ok);
    const ctl = new AbortController();
    const waiting = q.wait(req(1), ctl.signal);
    await new Promise((r) => setTimeout(r, 20));
    ctl.abort(new Error('client left'));
    await assert.rejects(waiting, /client left/);
    assert.equal(q.queued('u'), 0);
    const gone = new AbortController();
    gone.abort(new Error('gone already'));
    const t0 = Date.now();
    await assert.rejects(q.wait(req(1), gone.signal), /gone already/);
    assert.ok(Date.now() - t0 < 50);
  });
});

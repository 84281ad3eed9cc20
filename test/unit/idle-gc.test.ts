/**
 * The quiet-time collection (server/lifecycle/idle-gc.ts): two full collections once the gateway has
 * been quiet after serving model calls with its heap grown well above its size at start;
 * none while a call runs, none when nothing was served since the last ones, none when the
 * heap did not grow.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { watchIdleMemory, type Traffic } from '../../src/server/lifecycle/idle-gc.js';

const CHECK_MS = 20;
const QUIET_MS = 40;

const MB = 1024 * 1024;

function watched(): { traffic: { modelCalls: number; callsStarted: number }; heap: { bytes: number }; collections: () => number; stop: () => void } {
  const traffic = { modelCalls: 0, callsStarted: 0 };
  const heap = { bytes: 50 * MB };
  let n = 0;
  const stop = watchIdleMemory(traffic satisfies Traffic, {
    checkMs: CHECK_MS,
    quietMs: QUIET_MS,
    growthBytes: 64 * MB,
    residentBytes: () => heap.bytes,
    gc: () => n++,
  });
  return { traffic, heap, collections: () => n, stop };
}

test('a process that never served a model call is never collected', async () => {
  const w = watched();
  await sleep(CHECK_MS * 8);
  w.stop();
  assert.equal(w.collections(), 0);
});

test('after a busy period, two collections once quiet, then none until the next one', async () => {
  const w = watched();
  w.heap.bytes = 200 * MB;
  w.traffic.callsStarted = 5;
  w.traffic.modelCalls = 2;
  await sleep(CHECK_MS * 6);
  assert.equal(w.collections(), 0, 'no collection while calls are in flight');
  w.traffic.modelCalls = 0;
  await sleep(CHECK_MS * 10);
  assert.equal(w.collections(), 2);
  await sleep(CHECK_MS * 5);
  assert.equal(w.collections(), 2, 'nothing served since: nothing owed');
  w.traffic.callsStarted = 6;
  await sleep(CHECK_MS * 10);
  w.stop();
  assert.equal(w.collections(), 4);
});

test('a busy period that left the heap near its size at start is not collected', async () => {
  const w = watched();
  w.heap.bytes = 100 * MB;
  w.traffic.callsStarted = 3;
  await sleep(CHECK_MS * 10);
  w.stop();
  assert.equal(w.collections(), 0);
});

test('a check that throws (EMFILE reading the resident size) is reported and survived: the next checks run and collect', async () => {
  const traffic = { modelCalls: 0, callsStarted: 0 };
  let failing = true;
  const errors: unknown[] = [];
  let n = 0;
  const emfile = Object.assign(new Error('EMFILE: too many open files, uv_resident_set_memory'), { code: 'EMFILE' });
  const stop = watchIdleMemory(traffic, {
    checkMs: CHECK_MS,
    quietMs: QUIET_MS,
    growthBytes: 64 * MB,
    residentBytes: (() => {
      let first = true;
      return () => {
        // The size at start is read once, before any check.
        if (first) return ((first = false), 50 * MB);
        if (failing) throw emfile;
        return 200 * MB;
      };
    })(),
    gc: () => n++,
    onError: (err) => errors.push(err),
  });
  traffic.callsStarted = 3;
  await sleep(CHECK_MS * 8);
  assert.ok(errors.length > 0 && errors.every((e) => e === emfile), 'each failed check was reported');
  assert.equal(n, 0);
  failing = false;
  await sleep(CHECK_MS * 10);
  stop();
  assert.equal(n, 2, 'once the size could be read again, the owed collections ran');
});

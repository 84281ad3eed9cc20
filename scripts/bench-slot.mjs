#!/usr/bin/env node
// npm run bench:slot — what one Redis slot (one primary's thread) allows: the store's
// per-request scripts (view, acquire, release) run against a redis-server this script starts
// on a free port, from C concurrent loops in one process for SECONDS, as a model call uses
// them. Reports model calls per second and the Redis process's CPU share. In a Redis Cluster
// every Switchyard key shares one hash tag, so this is also the ceiling of one cluster.
//   --concurrency 64 --seconds 5
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { createRedisClient, RedisStore } from '../dist/store/redis.js';
import { startRedis } from './bench/procs.mjs';

const { values } = parseArgs({ options: { concurrency: { type: 'string', default: '64' }, seconds: { type: 'string', default: '5' } } });
const C = Number(values.concurrency);
const SECONDS = Number(values.seconds);

const logDir = mkdtempSync(join(tmpdir(), 'switchyard-slot-'));
const { child: redis, port } = await startRedis(logDir);
const cpu = () => {
  const f = readFileSync(`/proc/${redis.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, clock ticks of 10 ms
};

const client = createRedisClient({ url: `redis://127.0.0.1:${port}`, clusterNodes: [], options: {}, prefix: 'slot', commandTimeoutMs: 1000, leaseMs: 15000 });
await new Promise((r) => client.once('ready', r));
const store = new RedisStore(client, { prefix: 'slot', leaseMs: 15000 });
const bounds = { start: 64, min: 1, ceiling: 64 };
const refs = ['a', 'b', 'c'].map((u) => ({ key: `${u}/m`, upstream: u, capacity: bounds, calls: { start: 1000, min: 1, ceiling: 1000 } }));

let calls = 0;
const end = Date.now() + SECONDS * 1000;
const cpu0 = cpu();
const t0 = Date.now();
await Promise.all(
  Array.from({ length: C }, async (_, i) => {
    while (Date.now() < end) {
      await store.view(refs);
      const got = await store.acquire({ upstream: refs[i % 3].upstream, limit: 1000, deep: i % 2 === 0, capacity: bounds, calls: refs[0].calls });
      if (got.ok) await store.release(got.lease, { signal: 'ok', inFlight: got.lease.inFlight ?? 1 }, bounds);
      calls++;
    }
  }),
);
const secs = (Date.now() - t0) / 1000;
const redisCpu = (cpu() - cpu0) / secs;
await store.close();
redis.kill('SIGKILL');
rmSync(logDir, { recursive: true, force: true });
console.log(`one Redis slot, ${C} concurrent loops of view + acquire + release (3 scripts per model call), ${SECONDS} s, node ${process.version}`);
console.log(
  `model calls/s: ${Math.round(calls / secs)}   scripts/s: ${Math.round((3 * calls) / secs)}   redis-server CPU: ${(redisCpu * 100).toFixed(0)}% of one core`,
);

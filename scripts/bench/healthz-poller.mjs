// /healthz timed from a worker thread (its own event loop, so the load the bench sends from
// its main thread does not skew the reading): for bench-big-prompts and bench-hostile.
import { Worker } from 'node:worker_threads';

const POLLER = `
const { parentPort, workerData } = require('node:worker_threads');
const times = [];
let on = true;
let first = true;
parentPort.on('message', () => { on = false; });
(async () => {
  while (on) {
    const t0 = performance.now();
    const r = await fetch(workerData + '/healthz');
    await r.arrayBuffer();
    // The first request opens the connection: not a measure of the gateway's loop.
    if (first) first = false;
    else times.push(performance.now() - t0);
    await new Promise((res) => setTimeout(res, 10));
  }
  parentPort.postMessage(times);
})();`;

/**
 * GETs `${url}/healthz` every 10 ms while `during()` runs.
 * @returns the response times, ms, sorted ascending.
 */
export async function timeHealthz(url, during) {
  const poller = new Worker(POLLER, { eval: true, workerData: url });
  const done = new Promise((res) => poller.once('message', res));
  try {
    await during();
  } finally {
    poller.postMessage('stop');
  }
  const times = await done;
  await poller.terminate();
  return times.sort((a, b) => a - b);
}

const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN;

/** `n=… p50=… ms p99=… ms max=… ms` of sorted times, ms. */
export function healthzLine(xs) {
  return `n=${xs.length} p50=${pct(xs, 50).toFixed(1)} ms p99=${pct(xs, 99).toFixed(1)} ms max=${(xs.at(-1) ?? NaN).toFixed(1)} ms`;
}

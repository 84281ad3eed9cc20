// Redis commands per request: a MONITOR connection on an arm's own redis-server counts the
// top-level commands (sent by the gateway, not run inside a Lua script) while requests go
// through the arm one at a time.
import { performance } from 'node:perf_hooks';
import { createConnection } from 'node:net';
import { sleep } from './overhead-setup.mjs';

/**
 * Opens MONITOR on 127.0.0.1:`port`. Returns { take(), close() }: take() gives the commands
 * seen since the last take() as { total, by_command: { NAME: n } }, counting only lines whose
 * source is a client (`[db host:port]`), not `[db lua]`.
 */
async function monitor(port) {
  const socket = createConnection({ port, host: '127.0.0.1' });
  await new Promise((res, rej) => socket.once('connect', res).once('error', rej));
  let buf = '';
  let ok = false;
  let counts = { total: 0, by_command: {} };
  const okSeen = new Promise((res) => {
    socket.on('data', (d) => {
      buf += d.toString('utf8');
      let i;
      while ((i = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (!ok) {
          ok = line === '+OK';
          if (ok) res();
          continue;
        }
        const m = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]*)"/.exec(line);
        if (!m || m[1] === 'lua') continue;
        const name = m[2].toUpperCase();
        counts.total++;
        counts.by_command[name] = (counts.by_command[name] ?? 0) + 1;
      }
    });
  });
  socket.write('MONITOR\r\n');
  await okSeen;
  return {
    take() {
      const c = counts;
      counts = { total: 0, by_command: {} };
      return c;
    },
    close: () => socket.destroy(),
  };
}

/** One request through `arm`, its body read to the end; throws on a non-2xx status or a second network error. */
async function oneRequest(arm, model, stream) {
  const body = { model, messages: [{ role: 'user', content: 'x'.repeat(64) }], max_tokens: 64 };
  if (stream) Object.assign(body, { stream: true, stream_options: { include_usage: true } });
  const send = () =>
    fetch(`${arm.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...arm.headers }, body: JSON.stringify(body) });
  // A pooled connection left from an earlier phase may have been closed while idle (EPIPE): retry once on a fresh one.
  const res = await send().catch(send);
  await res.arrayBuffer();
  if (res.status >= 300) throw new Error(`${arm.name}: status ${res.status} in the commands-per-request phase`);
}

/**
 * Counts Redis commands per request for a Redis-mode `arm` (with `arm.redis.port`): first
 * the background commands in `idleMs` with no requests, then `n` sequential JSON requests and
 * `n` sequential streaming ones (model `model`), waiting `settleMs` after each batch so writes
 * made after the response are counted with it.
 * Returns { requests: n, background: {per_s, by_command}, json: {commands, per_request, by_command}, stream: {...} }.
 * per_request is the raw count / n (background included; see background.per_s for its share).
 */
export async function commandsPerRequest(arm, model, n, { idleMs = 2_000, settleMs = 500 } = {}) {
  // One request first, so connection set-up and script loading are not counted.
  await oneRequest(arm, model, false);
  await oneRequest(arm, model, true);
  await sleep(settleMs);
  const mon = await monitor(arm.redis.port);
  try {
    await sleep(idleMs);
    const bg = mon.take();
    const out = { requests: n, background: { per_s: Math.round((bg.total / idleMs) * 1000 * 100) / 100, by_command: bg.by_command } };
    for (const [mode, stream] of [
      ['json', false],
      ['stream', true],
    ]) {
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await oneRequest(arm, model, stream);
      await sleep(settleMs);
      const c = mon.take();
      const seconds = (performance.now() - t0) / 1000;
      out[mode] = { commands: c.total, per_request: Math.round((c.total / n) * 100) / 100, seconds: Math.round(seconds * 100) / 100, by_command: c.by_command };
    }
    return out;
  } finally {
    mon.close();
  }
}

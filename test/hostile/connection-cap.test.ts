/**
 * The caps on open connections: past `server.max_connections` in all, or
 * `server.max_connections_per_address` from one client address, a new connection gets a
 * raw 503 `too_many_connections` with `Connection: close` and is closed; the refusals are
 * counted and logged at most once a second, and once the held connections go, new ones
 * are served again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { closeAll, startWithUpstream, testConfigYaml, type TestGateway } from '../helpers/gateway.js';
import { openRaw, within, type RawConnection } from '../helpers/raw-socket.js';

/** Connections open on the gateway now (its own gauge, read in-process: a scrape would take a connection). */
async function openNow(gw: TestGateway): Promise<number> {
  return (await gw.metrics.connections.open.get()).values[0]?.value ?? 0;
}

/** Waits until the gateway counts `n` connections open (3 s at most). */
async function untilOpen(gw: TestGateway, n: number): Promise<void> {
  const end = Date.now() + 3_000;
  while ((await openNow(gw)) !== n) {
    if (Date.now() > end) throw new Error(`${await openNow(gw)} connections open, not ${n}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Opens `n` connections from `localAddress` and waits until the gateway counts `expected` open. */
async function hold(gw: TestGateway, n: number, expected: number, localAddress?: string): Promise<RawConnection[]> {
  const held = await Promise.all(Array.from({ length: n }, () => openRaw(gw.url, localAddress)));
  await untilOpen(gw, expected);
  return held;
}

/** A GET /healthz on a new connection from `localAddress`: what came back before the close. */
async function healthz(gw: TestGateway, localAddress?: string): Promise<string> {
  const c = await openRaw(gw.url, localAddress);
  c.socket.end('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  await within(c.closed, 3_000, Infinity);
  c.socket.destroy();
  return c.received();
}

/** Asserts that `c` got the 503 too_many_connections answer and was closed. */
async function assertRefused(c: RawConnection): Promise<void> {
  const closedMs = await within(c.closed, 3_000, Infinity);
  c.socket.destroy();
  const out = c.received();
  assert.match(out, /^HTTP\/1.1 503 /);
  assert.match(out, /\r\nConnection: close\r\n/i);
  assert.match(out, /\r\nRetry-After: 1\r\n/i);
  const body = JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4)) as { error: { type: string; code: string } };
  assert.deepEqual([body.error.type, body.error.code], ['server_error', 'too_many_connections']);
  assert.ok(closedMs < 1_000, `closed after ${closedMs} ms`);
}

/** The value of `switchyard_connections_refused_total{reason}` (0 when absent). */
async function refusedCount(gw: TestGateway, reason: string): Promise<number> {
  return (await gw.metrics.connections.refused.get()).values.find((v) => v.labels['reason'] === reason)?.value ?? 0;
}

describe('connections past server.max_connections are answered 503 and closed', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { server: '  max_connections: 20' })));
  });
  after(() => closeAll(gw, upstream));

  test('the extra connections get 503 too_many_connections; once the held ones close, a new one is served', async () => {
    const held = await hold(gw, 20, 20);
    const extra: RawConnection[] = [];
    try {
      extra.push(...(await Promise.all(Array.from({ length: 5 }, () => openRaw(gw.url)))));
      for (const c of extra) await assertRefused(c);
      assert.equal(await refusedCount(gw, 'max_connections'), 5);
      assert.equal(await openNow(gw), 20, 'refused connections are not counted open');
      // Five refusals within a second: one log line, naming the count.
      const lines = gw.logLines().filter((l) => String(l['msg']).startsWith('connections refused'));
      assert.equal(lines.length, 1);
      assert.equal(lines[0]!['level'], 'warn');
      assert.ok(((lines[0]!['refused'] as Record<string, number>)['max_connections'] ?? 0) >= 1);
    } finally {
      for (const c of [...held, ...extra]) c.socket.destroy();
    }
    await untilOpen(gw, 0);
    assert.match(await healthz(gw), /^HTTP\/1.1 200 [^]*\{"status":"ok"\}/);
    assert.match(await gw.metricsText(), /switchyard_connections_refused_total\{reason="max_connections"\} 5/);
  });
});

describe('connections past server.max_connections_per_address from one address are answered 503 and closed', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { server: '  max_connections: 100\n  max_connections_per_address: 5' })));
  });
  after(() => closeAll(gw, upstream));

  test('one address past its cap is refused while another address is served', async () => {
    const held = await hold(gw, 5, 5, '127.0.0.1');
    try {
      await assertRefused(await openRaw(gw.url, '127.0.0.1'));
      assert.equal(await refusedCount(gw, 'max_connections_per_address'), 1);
      assert.match(await healthz(gw, '127.0.0.2'), /^HTTP\/1.1 200 /);
    } finally {
      for (const c of held) c.socket.destroy();
    }
    await untilOpen(gw, 0);
    assert.match(await healthz(gw, '127.0.0.1'), /^HTTP\/1.1 200 /);
  });
});

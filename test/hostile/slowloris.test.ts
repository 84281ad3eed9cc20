/**
 * Clients that hold connections without finishing a request (slowloris): each is closed by
 * the config's deadlines, whatever its key. `server.headers_timeout_ms` bounds the headers
 * (a silent connection too), `server.keep_alive_timeout_ms` an idle kept-alive connection,
 * and an answer sent before a trickled body is in closes the connection; while many such
 * clients hang on, others are still served at once.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, startWithUpstream, testConfigYaml, type TestGateway } from '../helpers/gateway.js';
import { drip, openRaw, within } from '../helpers/raw-socket.js';

const HEADERS_MS = 1_000;
const KEEP_ALIVE_MS = 2_000;
/** How late past its deadline a connection may close (Node checks the header deadline every second at most). */
const SLACK_MS = 1_500;
/** When a test stops waiting: well past every deadline here, far short of Node's own (60 s and more). */
const GIVE_UP_MS = 8_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** Resolves once `ok()` holds (polled every 5 ms). */
async function waitUntil(ok: () => boolean): Promise<void> {
  while (!ok()) await sleep(5);
}

/** A chat request's head, with `auth` as its Authorization header line (or none). */
const head = (auth: string): string =>
  `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`;

describe('connections are bounded by the config deadlines whatever their key', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    const server = `  headers_timeout_ms: ${HEADERS_MS}\n  keep_alive_timeout_ms: ${KEEP_ALIVE_MS}\n  request_timeout_ms: 6000`;
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { server })));
  });
  after(() => closeAll(gw, upstream));

  for (const [name, auth] of [
    ['no key', ''],
    ['a valid key', `Authorization: Bearer ${CLIENT_KEY}\r\n`],
  ] as const) {
    test(`headers sent a byte every 500 ms with ${name} are cut at headers_timeout_ms with a 408`, async () => {
      const c = await openRaw(gw.url);
      drip(c.socket, head(auth), 500);
      const closedMs = await within(c.closed, GIVE_UP_MS, Infinity);
      c.socket.destroy();
      assert.ok(closedMs <= HEADERS_MS + SLACK_MS, `closed after ${closedMs} ms`);
      assert.match(c.received(), /^HTTP\/1.1 408/);
      assert.match(c.received(), /"type":"invalid_request_error"/);
    });
  }

  test('a connection that sends nothing is closed at headers_timeout_ms', async () => {
    const c = await openRaw(gw.url);
    const closedMs = await within(c.closed, GIVE_UP_MS, Infinity);
    c.socket.destroy();
    assert.ok(closedMs >= HEADERS_MS - 100 && closedMs <= HEADERS_MS + SLACK_MS, `closed after ${closedMs} ms`);
  });

  test('an idle kept-alive connection is closed at keep_alive_timeout_ms', async () => {
    const c = await openRaw(gw.url);
    const t0 = Date.now();
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const answeredMs = await new Promise<number>((resolve) => c.socket.once('data', () => resolve(Date.now() - t0)));
    const closedMs = (await within(c.closed, GIVE_UP_MS, Infinity)) - answeredMs;
    c.socket.destroy();
    assert.match(c.received(), /^HTTP\/1.1 200/);
    assert.match(c.received(), /keep-alive: timeout=2/i);
    // Idle between requests: the keep-alive timeout (plus the 1 s Node adds past the advertised
    // `Keep-Alive: timeout`, so a client going by it never races the close), not the header deadline.
    assert.ok(closedMs >= KEEP_ALIVE_MS - 200 && closedMs <= KEEP_ALIVE_MS + 1_000 + 500, `closed ${closedMs} ms after the answer`);
  });

  test('a client refused 401 that keeps trickling its declared body is closed after the answer', async () => {
    const c = await openRaw(gw.url);
    c.socket.write(head('Authorization: Bearer sk-not-a-key\r\n'));
    const stop = drip(c.socket, ' '.repeat(1_000), 100);
    const closedMs = await within(c.closed, GIVE_UP_MS, Infinity);
    stop();
    c.socket.destroy();
    assert.match(c.received(), /^HTTP\/1.1 401/);
    assert.ok(closedMs < 500, `closed after ${closedMs} ms`);
  });

  test('a client still sending its body after an early 401 gets the answer and a clean end, not a reset (lingering close)', async () => {
    // Half-open, as an HTTP client that reads its answer only after sending the whole body.
    const { port } = new URL(gw.url);
    const socket = connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true });
    const t0 = Date.now();
    let received = '';
    let failure: string | null = null;
    socket.on('data', (d: Buffer) => (received += d.toString('utf8')));
    socket.on('error', (e: NodeJS.ErrnoException) => (failure = e.code ?? String(e)));
    const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now() - t0)));
    const body = `{${' '.repeat(99_998)}}`;
    socket.write(head('Authorization: Bearer sk-not-a-key\r\n') + body.slice(1, 20_000));
    await within(
      waitUntil(() => /^HTTP\/1.1 401/.test(received)),
      GIVE_UP_MS,
      undefined,
    );
    // The rest of the body, in two writes after the answer came: the gateway must still be
    // reading (had it closed, the first write would draw a reset and the second fail on it).
    const write = (part: string): Promise<boolean> => new Promise((r) => socket.write(part, (err) => r(!err)));
    await sleep(30);
    const wrote = [await write(body.slice(20_000, 60_000))];
    await sleep(50);
    wrote.push(await write(body.slice(60_000)));
    await sleep(30);
    socket.end();
    const closedMs = await within(closed, GIVE_UP_MS, Infinity);
    assert.match(received, /^HTTP\/1.1 401[^]*connection: close/i);
    assert.equal(failure, null, 'no reset while the body was still being sent');
    assert.deepEqual(wrote, [true, true], 'the rest of the body was written');
    assert.ok(closedMs < 2_000, `closed after ${closedMs} ms`);
  });

  test('while 200 connections trickle their headers, /healthz on a new one answers at once', async () => {
    const held = await Promise.all(Array.from({ length: 200 }, () => openRaw(gw.url)));
    for (const c of held) drip(c.socket, head(''), 200);
    try {
      const t0 = Date.now();
      const res = await fetch(`${gw.url}/healthz`, { signal: AbortSignal.timeout(3_000) });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { status: 'ok' });
      assert.ok(Date.now() - t0 < 500, `answered after ${Date.now() - t0} ms`);
    } finally {
      for (const c of held) c.socket.destroy();
    }
  });
});

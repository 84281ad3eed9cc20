/**
 * Requests the gateway cannot parse or cannot wait for, sent over raw sockets: malformed
 * HTTP gets an OpenAI-style 400, and a body trickled slower than `server.request_timeout_ms`
 * is cut with an OpenAI-style 408 (`invalid_request_error`) instead of holding the
 * connection open.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, startWithUpstream, testConfigYaml, type TestGateway } from '../helpers/gateway.js';

describe('malformed or trickled HTTP requests get OpenAI-style errors', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { server: '  request_timeout_ms: 400' })));
  });
  after(() => closeAll(gw, upstream));

  /** Writes `payload` on a new connection and collects what comes back until close (or `waitMs`). */
  function raw(payload: string, waitMs = 3000): Promise<string> {
    const { port } = new URL(gw.url);
    return new Promise((resolve) => {
      const s = connect(Number(port), '127.0.0.1', () => s.write(payload));
      let out = '';
      s.on('data', (d) => (out += d.toString()));
      s.on('close', () => resolve(out));
      setTimeout(() => {
        s.destroy();
        resolve(out);
      }, waitMs);
    });
  }

  test('malformed HTTP gets an OpenAI-style 400', async () => {
    const out = await raw('GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n');
    assert.match(out, /^HTTP\/1.1 400/);
    const body = JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4)) as { error: { type: string } };
    assert.equal(body.error.type, 'invalid_request_error');
  });

  test('a body trickled slower than request_timeout_ms is cut with an OpenAI-style 408', async () => {
    const t0 = Date.now();
    const out = await raw(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${CLIENT_KEY}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
    );
    assert.match(out, /^HTTP\/1.1 408/);
    assert.match(out, /"type":"invalid_request_error"/);
    assert.ok(Date.now() - t0 < 2900, 'closed well before the test gave up');
  });

  test('a bad key with a body still coming gets its 401 and the connection is closed, however slowly the body trickles', async () => {
    const { port } = new URL(gw.url);
    const t0 = Date.now();
    const { out, closedMs } = await new Promise<{ out: string; closedMs: number }>((resolve) => {
      const s = connect(Number(port), '127.0.0.1', () =>
        s.write(
          'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-not-a-key\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
        ),
      );
      let got = '';
      // One more byte every 100 ms, for as long as the connection stays open.
      const drip = setInterval(() => s.writable && s.write(' '), 100);
      s.on('data', (d) => (got += d.toString()));
      s.on('error', () => {});
      s.on('close', () => {
        clearInterval(drip);
        resolve({ out: got, closedMs: Date.now() - t0 });
      });
      setTimeout(() => s.destroy(), 5_000);
    });
    assert.match(out, /^HTTP\/1.1 401/);
    assert.match(out, /connection: close/i);
    // Closed by the gateway right after its answer: not at request_timeout_ms (400), nor when the test gave up (5 s).
    assert.ok(closedMs < 350, `closed after ${closedMs} ms`);
  });
});

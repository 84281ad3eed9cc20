/**
 * decodeBody's stop(): a body refused mid-way (the in-flight body cap, server/body-guard.ts)
 * stops inflating at once. The rest of the encoded bytes is read and dropped, so a small
 * gzip holding 64 MiB costs the gateway the MiB it had decoded, not the 64.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { decodeBody } from '../../src/server/http/body-decoding.js';

const MiB = 1024 * 1024;

/** A gzip of `mib` MiB of zeros, handed out in 1 KiB chunks. */
function bomb(mib: number): { source: Readable; encodedBytes: number } {
  const gz = gzipSync(Buffer.alloc(mib * MiB));
  const chunks: Buffer[] = [];
  for (let i = 0; i < gz.length; i += 1024) chunks.push(gz.subarray(i, i + 1024));
  return { source: Readable.from(chunks, { objectMode: false }), encodedBytes: gz.length };
}

describe('decodeBody', () => {
  test('decodes a whole gzip body when nobody stops it', async () => {
    const { source } = bomb(8);
    const out = decodeBody(source, ['gzip'], 64 * MiB);
    let decoded = 0;
    // Read as Fastify reads a body ('data' events: the source is piped in once they start).
    out.on('data', (chunk: Buffer) => (decoded += chunk.length));
    await once(out, 'end');
    assert.equal(decoded, 8 * MiB);
  });

  test('stop(err) ends the stream with err and inflates no more; the encoded rest is drained', async () => {
    const { source, encodedBytes } = bomb(64);
    const out = decodeBody(source, ['gzip'], 128 * MiB);
    const refused = new Error('refused mid-way');
    let decoded = 0;
    let stopped = false;
    out.on('data', (chunk: Buffer) => {
      decoded += chunk.length;
      if (!stopped && decoded >= MiB) {
        stopped = true;
        out.stop(refused);
      }
    });
    const [err] = (await once(out, 'error').catch((e: unknown) => [e])) as [Error];
    assert.equal(err, refused);
    if (!source.readableEnded) await once(source, 'end');
    assert.ok(stopped, 'the first MiB arrived');
    assert.ok(decoded < 8 * MiB, `decoded ${decoded} bytes of 64 MiB after stop()`);
    assert.ok(source.readableEnded, `the encoded body (${encodedBytes} bytes) was read to its end`);
  });
});

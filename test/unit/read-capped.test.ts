/**
 * upstream/send.ts `readCapped`, which reads every non-streamed answer and error body: the
 * bytes in order, the cap, and the same rejections `for await` over the stream gives (the
 * relay classifies them as the upstream's failure).
 */
import assert from 'node:assert/strict';
import { PassThrough, pipeline, Readable } from 'node:stream';
import { brotliCompressSync, createBrotliDecompress } from 'node:zlib';
import { describe, test } from 'node:test';
import { readCapped } from '../../src/upstream/send.js';

/** A body that sends `parts` one per tick, then ends (or is destroyed with `end`). */
function body(parts: (string | Buffer)[], end?: Error | 'close'): Readable {
  const r = new Readable({ read() {} });
  let i = 0;
  const step = (): void => {
    if (i < parts.length) {
      r.push(parts[i++]);
      setImmediate(step);
    } else if (end === 'close') r.destroy();
    else if (end) r.destroy(end);
    else r.push(null);
  };
  setImmediate(step);
  return r;
}

describe('readCapped', () => {
  test('joins the chunks in order; a single chunk comes back as it was', async () => {
    const many = await readCapped(body(['{"a":', Buffer.from('1,"b":"é"'), '}']), 1024);
    assert.deepEqual(JSON.parse(many.buf.toString('utf8')), { a: 1, b: 'é' });
    assert.equal(many.truncated, false);
    const one = Buffer.from('{"only":true}');
    const single = await readCapped(body([one]), 1024);
    assert.equal(single.buf.toString(), '{"only":true}');
    const empty = await readCapped(body([]), 1024);
    assert.equal(empty.buf.length, 0);
  });

  test('past the cap it returns what fit, marks it truncated and destroys the body', async () => {
    const r = body(['x'.repeat(600), 'y'.repeat(600), 'z'.repeat(600)]);
    const got = await readCapped(r, 1000);
    assert.equal(got.truncated, true);
    assert.equal(got.buf.toString(), 'x'.repeat(600));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(r.destroyed, true);
  });

  test('a body that fails, or closes before its end, rejects as for await would', async () => {
    await assert.rejects(readCapped(body(['{"a":'], new Error('socket hang up')), 1024), /socket hang up/);
    await assert.rejects(readCapped(body(['{"a":'], 'close'), 1024), (err: NodeJS.ErrnoException) => err.code === 'ERR_STREAM_PREMATURE_CLOSE');
    const gone = new Readable({ read() {} });
    gone.destroy(new Error('already failed'));
    await assert.rejects(readCapped(gone, 1024), /already failed/);
  });

  test('a decoded answer is read when its compressed data ends, even while its upstream body is still open', async () => {
    // As upstream/send.ts decodes: the upstream body piped into a decoder. Brotli ends its
    // output once the compressed stream is complete; a stray byte after it keeps the input open.
    const upstream = new PassThrough();
    const decoded = pipeline(upstream, createBrotliDecompress(), () => {}) as unknown as Readable;
    upstream.write(Buffer.concat([brotliCompressSync('{"ok":true}'), Buffer.from('\n')]));
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<'stalled'>((resolve) => (timer = setTimeout(() => resolve('stalled'), 2_000)));
    const got = await Promise.race([readCapped(decoded, 1024), stalled]);
    clearTimeout(timer);
    assert.notEqual(got, 'stalled', 'the answer waited for the upstream body to end');
    assert.equal((got as { buf: Buffer }).buf.toString(), '{"ok":true}');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(upstream.destroyed, true, 'the upstream body is let go once the answer is read');
  });
});

/**
 * redactSecrets: key material an upstream echoes never reaches a client or a log, in any
 * spelling the echo may use (plain, percent-encoded as in a query string, JSON-escaped).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { redactSecrets } from '../../src/util/redact.js';

const KEY = 'AIzaSy+Ab/Cd=Ef"gh\\ij kl';

describe('redactSecrets', () => {
  test('the configured key, plain', () => {
    assert.equal(redactSecrets(`bad key ${KEY} given`, [KEY]), 'bad key [redacted] given');
  });

  test('percent-encoded, upper or lower hex, and with + for spaces (a key in a query string echoed in a URL)', () => {
    const enc = encodeURIComponent(KEY);
    assert.notEqual(enc, KEY);
    const lower = enc.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
    const plus = enc.replace(/%20/g, '+');
    for (const form of [enc, lower, plus]) {
      const out = redactSecrets(`GET https://up.example/v1beta/models?key=${form}&alt=sse failed`, [KEY]);
      assert.equal(out, 'GET https://up.example/v1beta/models?key=[redacted]&alt=sse failed', form);
    }
  });

  test('JSON-escaped inside an echoed body', () => {
    const echoed = JSON.stringify({ error: { message: `key ${KEY} is invalid` } });
    const out = redactSecrets(echoed, [KEY]);
    assert.ok(!out.includes('Ab/Cd'), out);
    assert.equal(JSON.parse(out).error.message, 'key [redacted] is invalid');
  });

  test('key-like tokens and bearer tokens without being told; short or absent secrets ignored', () => {
    assert.equal(redactSecrets('got sk-proj-abcdef123 and sk-abc***xyz'), 'got [redacted] and [redacted]');
    assert.equal(redactSecrets('Authorization: Bearer abc.def.ghi'), 'Authorization: Bearer [redacted]');
    assert.equal(redactSecrets('abc stays', ['abc', undefined, '']), 'abc stays');
  });
});

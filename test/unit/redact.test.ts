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

  test('any mix: encodeURI (space encoded, / and + kept), mixed-case hex, \\u escapes', () => {
    const forms = [
      encodeURI(KEY),
      encodeURIComponent(KEY).replace('%2F', '%2f'),
      KEY.replace(' ', '+'),
      JSON.stringify(KEY).slice(1, -1).replace('/', '\\/').replace('A', '\\u0041').replace('b', '\\u0062'),
    ];
    for (const form of forms) assert.equal(redactSecrets(`<${form}>`, [KEY]), '<[redacted]>', form);
  });

  test('base64 at any alignment (an echoed Basic authorization: user:key)', () => {
    for (const user of ['', 'u', 'us', 'usr']) {
      const basic = Buffer.from(`${user}:${KEY}`).toString('base64');
      const out = redactSecrets(`Authorization: Basic ${basic}`, [KEY]);
      assert.match(out, /\[redacted\]/, `${user}: ${out}`);
      const left = out
        .replace(/^Authorization: Basic /, '')
        .split('[redacted]')
        .join('');
      // What is left: the user part and at most the key's first and last few bytes.
      assert.ok(left.length <= Math.ceil(((user.length + 1) * 4) / 3) + 8, `${user}: at most the edges left (${left})`);
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

/**
 * The key store's memory of accepted keys (auth/keys.ts `acceptedBefore`), which lets the
 * auth hook skip the throttle's lookup for a key already accepted: only a digest that
 * matched is remembered, so unknown keys cannot grow it, and a new store starts empty.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hashKey, KeyStore } from '../../src/auth/keys.js';

const store = () =>
  new KeyStore([
    { name: 'team-a', key_sha256: hashKey('sk-team-a'), models: ['*'], priority: 'interactive', metadata: {} },
    { name: 'team-b', key_sha256: hashKey('sk-team-b'), models: ['gpt-*'], priority: 'interactive', metadata: {} },
  ]);

describe('key store: accepted keys', () => {
  test('a digest is remembered only once it matched, with its own caller', () => {
    const s = store();
    assert.equal(s.acceptedBefore(hashKey('sk-team-b')), undefined, 'nothing is known before a match');
    for (let i = 0; i < 1_000; i++) assert.equal(s.byHex(hashKey(`sk-guess-${i}`)), null);
    for (let i = 0; i < 1_000; i++) assert.equal(s.acceptedBefore(hashKey(`sk-guess-${i}`)), undefined, 'a key that failed is never remembered');
    assert.equal(s.byHex(hashKey('sk-team-b'))?.name, 'team-b');
    assert.equal(s.acceptedBefore(hashKey('sk-team-b'))?.name, 'team-b');
    assert.equal(s.acceptedBefore(hashKey('sk-team-a')), undefined, 'the other key has not been presented');
    assert.equal(store().acceptedBefore(hashKey('sk-team-b')), undefined, 'a new store (a reload) starts empty');
  });
});

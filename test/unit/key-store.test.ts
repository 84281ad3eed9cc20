/**
 * The key store's memory of accepted keys (auth/keys.ts `acceptedBefore`), which lets the
 * auth hook skip the throttle's lookup for a key already accepted: only a digest that
 * matched is remembered, so unknown keys cannot grow it, and a new store starts empty.
 * Then the hook itself (a real Fastify app) when its check fails without an Error.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Fastify from 'fastify';
import { hashKey, KeyStore } from '../../src/auth/keys.js';
import { authHook } from '../../src/auth/plugin.js';
import { AuthThrottle } from '../../src/limits/auth-throttle.js';

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

describe('auth hook: a failing check', () => {
  test('a check that rejects with no Error still refuses the request (500), never lets it through without a caller', async () => {
    // A throttle whose lookup fails with an empty value: the hook must not read it as success.
    class EmptyFailure extends AuthThrottle {
      override keyBlocked(): Promise<null> {
        return Promise.reject(undefined);
      }
    }
    const keys = store();
    const app = Fastify();
    app.addHook(
      'onRequest',
      authHook(() => keys, new EmptyFailure()),
    );
    app.get('/v1/whoami', async (req) => ({ caller: req.caller?.name ?? null }));
    try {
      const unknown = await app.inject({ url: '/v1/whoami', headers: { authorization: 'Bearer sk-not-a-key' } });
      assert.equal(unknown.statusCode, 500, unknown.body);
      const valid = await app.inject({ url: '/v1/whoami', headers: { authorization: 'Bearer sk-team-a' } });
      assert.equal(valid.statusCode, 500, 'the throttle is still asked the first time a key is seen');
    } finally {
      await app.close();
    }
  });
});

/** LiveState: generations held by requests, and when replaced providers are closed. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KeyStore } from '../../src/auth/keys.js';
import type { GatewayConfig } from '../../src/config/load.js';
import type { Provider } from '../../src/providers/types.js';
import type { Router } from '../../src/router/index.js';
import { LiveState, type Generation } from '../../src/server/reload/live.js';

function provider(): Provider & { closed: number } {
  const p = {
    closed: 0,
    wireApis: new Set(['chat'] as const),
    send: () => Promise.reject(new Error('unused')),
    close: async () => {
      p.closed++;
    },
  };
  return p;
}

function gen(providers: Record<string, Provider>, tag: string): Generation {
  return {
    config: { path: tag } as unknown as GatewayConfig,
    keys: {} as KeyStore,
    router: {} as Router,
    providers: new Map(Object.entries(providers)),
  };
}

test('a replaced provider closes only when the last request holding it is done; a kept one never', () => {
  const keep = provider();
  const old = provider();
  const live = new LiveState(gen({ keep, x: old }, 'v1'));
  const h1 = live.hold();
  const h1b = live.hold();
  assert.equal(h1.config.path, 'v1');

  const fresh = provider();
  live.swap(gen({ keep, x: fresh }, 'v2'));
  assert.equal(live.current.config.path, 'v2');
  assert.equal(h1.providers.get('x'), old, 'a held generation keeps its providers');
  assert.equal(live.hold().config.path, 'v2');
  h1.release();
  h1.release(); // idempotent
  assert.equal(old.closed, 0, 'still held by another request');
  h1b.release();
  assert.equal(old.closed, 1);
  assert.equal(keep.closed, 0);
  assert.equal(fresh.closed, 0);
});

test('a provider shared by two superseded generations closes after both drain; closeAll closes the rest once', async () => {
  const p = provider();
  const q = provider();
  const live = new LiveState(gen({ p }, 'v1'));
  const h1 = live.hold();
  live.swap(gen({ p }, 'v2'));
  const h2 = live.hold();
  live.swap(gen({ q }, 'v3'));
  assert.equal(live.draining, 2);
  h2.release();
  assert.equal(p.closed, 0, 'v1 still holds it');
  h1.release();
  assert.equal(p.closed, 1);
  assert.equal(live.draining, 0);
  await live.closeAll();
  await live.closeAll();
  assert.equal(q.closed, 1);
  assert.equal(p.closed, 1);
});

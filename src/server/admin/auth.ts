/**
 * The admin app's key check: every route needs `Authorization: Bearer <admin key>`,
 * compared by SHA-256 in constant time against `admin.key_sha256` of the current config; no
 * key or a wrong one is 401, a valid client key is 403, and 10 wrong keys from one address
 * within a minute get 429 until the minute is over. Routes marked `adminPublic` (the console
 * pages, which hold no data) need no key.
 */
import { timingSafeEqual } from 'node:crypto';
import fp from 'fastify-plugin';
import { hashKey } from '../../auth/keys.js';
import { bearerToken, throttledError } from '../../auth/plugin.js';
import { GatewayError } from '../../errors/codes.js';
import { AuthThrottle } from '../../limits/index.js';
import type { AdminPluginOptions } from '../gateway.js';

/** Adds the admin-key `onRequest` hook to the admin app (register it before the routes). */
export const adminAuth = fp<AdminPluginOptions>(
  async (admin, { gw }) => {
    // Like the client port: a wrong key is throttled on its own, an address only for keys that
    // never worked; the right admin key is always accepted.
    const throttle = new AuthThrottle(10);
    admin.addHook('onRequest', async (req) => {
      // The console page itself holds no data (its data endpoint needs the key).
      if (req.routeOptions.config.adminPublic === true) return;
      const key = bearerToken(req);
      if (key === undefined)
        throw new GatewayError('GW_ERR_INVALID_API_KEY', { message: 'Missing admin key. Send it as "Authorization: Bearer <admin key>".' });
      const digest = hashKey(key);
      const held = await throttle.keyBlocked(digest);
      if (held) throw throttledError(held);
      const expected = gw.current().config.admin.key_sha256;
      if (expected && timingSafeEqual(Buffer.from(digest, 'hex'), Buffer.from(expected, 'hex'))) {
        throttle.remember(digest);
        return;
      }
      if (gw.current().keys.authenticate(key)) {
        throw new GatewayError('GW_ERR_FORBIDDEN', { message: 'A client key cannot use the admin API; send the admin key.' });
      }
      const byAddress = throttle.wasValid(digest) ? null : await throttle.addressBlocked(req.ip);
      await throttle.failed(req.ip, digest);
      if (byAddress) throw throttledError(byAddress);
      throw new GatewayError('GW_ERR_INVALID_API_KEY', { message: 'Incorrect admin key provided.' });
    });
  },
  { name: 'switchyard-admin-auth' },
);

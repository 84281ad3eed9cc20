/**
 * One undici Pool per upstream origin: keep-alive connections reused across requests,
 * at most `max_concurrency` sockets, connect timeout from the upstream's config.
 */
import { Pool } from 'undici';
import type { LiveUpstream } from '../config/types.js';

/** Creates the connection pool for an upstream's `base_url` origin. */
export function createPool(upstream: LiveUpstream, baseUrl: URL): Pool {
  return new Pool(baseUrl.origin, {
    connections: upstream.max_concurrency,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    connect: { timeout: upstream.timeouts.connect_ms },
    headersTimeout: upstream.timeouts.first_byte_ms,
    bodyTimeout: upstream.timeouts.idle_ms,
  });
}

/** Compressed and large request bodies, as a plugin. */
import fp from 'fastify-plugin';
import { recordBodyGuardRefused } from '../metrics/record.js';
import { BodyGuard, useBodyGuard } from '../server/http/body-guard.js';
import { useBodyDecoding } from '../server/http/body-decoding.js';
import type { GatewayParts } from './parts.js';

/**
 * gzip, deflate, br and zstd bodies of the model-call routes, held to the body limit as
 * decoded (server/http/body-decoding.ts); then the large-body memory guard, which meters
 * what was decoded (server/http/body-guard.ts).
 */
export const bodies = fp<GatewayParts>(
  async (app, { generations, metrics }) => {
    const { live } = generations;
    useBodyDecoding(app, () => live.current.config.server.body_limit_bytes);
    useBodyGuard(
      app,
      new BodyGuard(),
      () => live.current.config.server.max_body_bytes_in_flight,
      () => recordBodyGuardRefused(metrics),
    );
  },
  { name: 'switchyard-bodies' },
);

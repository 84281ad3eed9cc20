/** `GET /v1/models`: the models the calling key may use, in OpenAI's list shape. */
import type { FastifyInstance } from 'fastify';
import { mayUse } from '../auth/keys.js';
import { modelNamed } from '../config/aliases.js';
import type { GatewayConfig } from '../config/types.js';
import { GatewayError } from '../errors/codes.js';

export function registerModels(app: FastifyInstance, config: () => GatewayConfig, startedAt: number): void {
  const created = Math.floor(startedAt / 1000);
  app.get('/v1/models', async (req) => {
    const caller = req.caller;
    const data = [...config().models.values()]
      .filter((m) => caller && mayUse(caller, m.name))
      .map((m) => ({ id: m.name, object: 'model', created, owned_by: 'switchyard' }));
    return { object: 'list', data };
  });
  app.get<{ Params: { model: string } }>('/v1/models/:model', async (req, reply) => {
    const m = modelNamed(config(), req.params.model);
    if (!m || !req.caller || !mayUse(req.caller, m.name)) {
      throw new GatewayError('GW_ERR_MODEL_NOT_FOUND', { param: 'model' });
    }
    void reply.header('cache-control', 'no-store');
    return { id: m.name, object: 'model', created, owned_by: 'switchyard' };
  });
}

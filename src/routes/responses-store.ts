/**
 * The stored responses of the Responses API (OpenAI API reference, "Get a model response",
 * "Delete a model response", "List input items"), answered from the gateway's journal
 * (pipeline/continuation.ts), whichever account made the response: a chat-completions account
 * keeps none, and the journal holds what the gateway relayed (the output items, the
 * conversation's input items), so a client reads its response back the same way on every
 * account. Only the key that made a response reads or deletes it; any other gets the 404 an
 * unknown id gets. Deleting forgets the journal entry and the owner pin; the owning account's
 * own copy (a Responses account) is not deleted there. `POST /v1/responses/compact` is a
 * model call (apis/responses.ts `compactApi`), registered here with the other
 * `/v1/responses/...` routes.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { compactApi } from '../apis/responses.js';
import { GatewayError } from '../errors/codes.js';
import { forgetResponse, readJournal, type JournalEntry } from '../pipeline/continuation.js';
import { handleModelCall, type PipelineDeps } from '../pipeline/handle.js';

type Params = { Params: { id: string } };

/** The fields of a compaction the gateway reads (OpenAPI `CompactResponseMethodPublicBody`); the rest passes through. */
const CompactSchema = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    input: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Unknown()), Type.Null()])),
    previous_response_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 512 }), Type.Null()])),
  },
  { additionalProperties: true },
);

/** The entry of `id` when the caller's key made it, else the 404 OpenAI answers for an unknown id. */
async function entryOf(deps: PipelineDeps, id: string, key: string | undefined): Promise<JournalEntry> {
  const entry = await readJournal(deps.journal, id);
  if (entry && (entry.key ?? null) === (key ?? null)) return entry;
  throw new GatewayError('GW_ERR_RESPONSE_NOT_FOUND', { message: `Response with id '${id.slice(0, 128)}' not found.` });
}

/** An item as listed: the id it was sent with, or one made from its place in the conversation. */
function listed(item: unknown, id: string, i: number): Record<string, unknown> {
  const o = item && typeof item === 'object' && !Array.isArray(item) ? (item as Record<string, unknown>) : { content: item };
  return { ...o, id: typeof o['id'] === 'string' ? o['id'] : `item_${id.slice(-24)}_${i}`, type: o['type'] ?? 'message' };
}

/**
 * The list parameters of `input_items` (OpenAI API reference, "List input items": `limit`
 * 1–100, default 20; `order` `asc` | `desc`, default `desc`; `after` an item id).
 * @throws GatewayError 400 naming the parameter for a bad value.
 */
function pageOf(q: Record<string, string | undefined>): { limit: number; order: 'asc' | 'desc'; after: string | undefined } {
  const limit = q['limit'] === undefined ? 20 : Number(q['limit']);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw new GatewayError('GW_ERR_INVALID_REQUEST', { message: "'limit' must be an integer from 1 to 100.", param: 'limit' });
  const order = q['order'] ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw new GatewayError('GW_ERR_INVALID_REQUEST', { message: "'order' must be 'asc' or 'desc'.", param: 'order' });
  return { limit, order, after: q['after'] };
}

export function registerResponsesStore(app: FastifyInstance, deps: PipelineDeps): void {
  // A compaction is a model call: the key's limits and budgets, failover, the record and its cost (pipeline/handle.ts).
  app.post(
    '/v1/responses/compact',
    { schema: { body: CompactSchema }, config: { api: 'responses', decodesBody: true, errorBody: compactApi.errorBody } },
    async (req, reply) => {
      await handleModelCall(compactApi, deps, req, reply);
    },
  );
  app.get<Params>('/v1/responses/:id', async (req) => {
    const entry = await entryOf(deps, req.params.id, req.caller?.name);
    return { id: req.params.id, object: 'response', created_at: entry.createdAt ?? null, status: 'completed', error: null, output: entry.output };
  });
  app.get<Params & { Querystring: Record<string, string | undefined> }>('/v1/responses/:id/input_items', async (req) => {
    const { limit, order, after } = pageOf(req.query);
    const entry = await entryOf(deps, req.params.id, req.caller?.name);
    // Newest first unless `order=asc`, as the API lists them; `after` an item id of the list.
    const all = entry.input.map((item, i) => listed(item, req.params.id, i));
    if (order === 'desc') all.reverse();
    const from = after === undefined ? 0 : all.findIndex((x) => x['id'] === after) + 1;
    if (after !== undefined && from === 0)
      throw new GatewayError('GW_ERR_INVALID_REQUEST', { message: `No item with id '${after.slice(0, 128)}' in this response's input.`, param: 'after' });
    const data = all.slice(from, from + limit);
    return { object: 'list', data, first_id: data[0]?.['id'] ?? null, last_id: data.at(-1)?.['id'] ?? null, has_more: from + limit < all.length };
  });
  app.delete<Params>('/v1/responses/:id', async (req) => {
    await entryOf(deps, req.params.id, req.caller?.name);
    await forgetResponse(deps.journal, req.params.id);
    return { id: req.params.id, object: 'response', deleted: true };
  });
}

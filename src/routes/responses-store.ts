/**
 * The stored responses of the Responses API (OpenAI API reference, "Get a model response",
 * "Delete a model response", "List input items"), answered from the gateway's journal
 * (pipeline/continuation.ts), whichever account made the response: a chat-completions account
 * keeps none, and the journal holds what the gateway relayed (the output items, the
 * conversation's input items), so a client reads its response back the same way on every
 * account. Only the key that made a response reads or deletes it; any other gets the 404 an
 * unknown id gets. Deleting forgets the journal entry and the owner pin; the owning account's
 * own copy (a Responses account) is not deleted there.
 */
import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../errors/codes.js';
import { forgetResponse, readJournal, type JournalEntry } from '../pipeline/continuation.js';
import type { PipelineDeps } from '../pipeline/handle.js';

type Params = { Params: { id: string } };

/** The entry of `id` when the caller's key made it, else the 404 OpenAI answers for an unknown id. */
async function entryOf(deps: PipelineDeps, id: string, key: string | undefined): Promise<JournalEntry> {
  const gen = deps.hold();
  try {
    const entry = await readJournal(gen.router.store, id);
    if (entry && (entry.key ?? null) === (key ?? null)) return entry;
  } finally {
    gen.release();
  }
  throw new GatewayError('GW_ERR_RESPONSE_NOT_FOUND', { message: `Response with id '${id.slice(0, 128)}' not found.` });
}

/** An item as listed: the id it was sent with, or one made from its place in the conversation. */
function listed(item: unknown, id: string, i: number): Record<string, unknown> {
  const o = item && typeof item === 'object' && !Array.isArray(item) ? (item as Record<string, unknown>) : { content: item };
  return { ...o, id: typeof o['id'] === 'string' ? o['id'] : `item_${id.slice(-24)}_${i}`, type: o['type'] ?? 'message' };
}

export function registerResponsesStore(app: FastifyInstance, deps: PipelineDeps): void {
  app.get<Params>('/v1/responses/:id', async (req) => {
    const entry = await entryOf(deps, req.params.id, req.caller?.name);
    return { id: req.params.id, object: 'response', created_at: entry.createdAt ?? null, status: 'completed', error: null, output: entry.output };
  });
  app.get<Params>('/v1/responses/:id/input_items', async (req) => {
    const entry = await entryOf(deps, req.params.id, req.caller?.name);
    // Newest first, as the API lists them by default.
    const data = entry.input.map((item, i) => listed(item, req.params.id, i)).reverse();
    return { object: 'list', data, first_id: data[0]?.['id'] ?? null, last_id: data.at(-1)?.['id'] ?? null, has_more: false };
  });
  app.delete<Params>('/v1/responses/:id', async (req) => {
    await entryOf(deps, req.params.id, req.caller?.name);
    const gen = deps.hold();
    try {
      await forgetResponse(gen.router.store, req.params.id);
    } finally {
      gen.release();
    }
    return { id: req.params.id, object: 'response', deleted: true };
  });
}

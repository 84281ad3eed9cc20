/**
 * Responses API conversations that survive routing (`previous_response_id`).
 *
 * An account that speaks the Responses API keeps the responses it made, so a follow-up
 * naming one must reach that account: each answered response's owner (its target) is
 * pinned in the shared store (`resp:<id>`), and a follow-up is routed there first (the
 * `sticky` strategy with that pin), across replicas. Every answered response is also
 * journalled in the store, with a TTL (`store.journal_ttl_ms`): the conversation's input
 * items and the response's output items, as the client would send them by value. When the
 * follow-up cannot go to the owner (another account of the model, the owner cooling or hot,
 * a chat-completions account that keeps nothing), it is rebuilt from the journal as a
 * self-contained request: `input` = the journalled input + output + the new input, without
 * `previous_response_id`, and without the reasoning items another account cannot read
 * (encrypted) and the item ids it does not know. The answer says so in
 * `x-switchyard-continuation`: `pinned` (sent to the owner), `rebuilt` (the owner keeps
 * nothing: a chat-completions account), `migrated` (the owner keeps it, but the call went
 * elsewhere). A response the gateway never journalled can only go to a Responses account
 * (which may know it); with none, the client gets 400 `previous_response_not_found`.
 * A follow-up sent with `store: false` is rebuilt for the owner too: the account kept
 * nothing it could look up (OpenAI keeps such a response only in the memory of the
 * WebSocket that made it, and the gateway reaches accounts over HTTP).
 *
 * A warmup (`generate: false`, pipeline/warmup.ts) is journalled without an owner: its
 * items are the client's own, sent as they are to whichever account serves the follow-up.
 *
 * A journal entry larger than JOURNAL_ENTRY_MAX characters is not kept (its follow-ups go
 * to the owner only). The journal never holds keys or headers: only the items.
 */
import type { ApiName } from '../apis/names.js';
import type { Model, Target } from '../config/types.js';
import { GatewayError } from '../errors/codes.js';
import type { ResponseJournal } from '../store/roles.js';
import type { ResponseAnswer } from '../translate/types.js';

/** How long a follow-up whose previous response is not on record yet waits for it once, ms. */
const RECORD_RACE_MS = 50;

/** The largest journal entry kept, characters of JSON. */
export const JOURNAL_ENTRY_MAX = 4 * 1024 * 1024;

type Obj = Record<string, unknown>;

/** One journalled response: where it was made, and its conversation as input items. */
interface JournalEntry {
  readonly v: 1;
  /** The target (`upstream/model`) that answered it; null for a warmup, which no account made. */
  readonly target: string | null;
  /** The wire API that target was reached over (`responses`: the account keeps it); null for a warmup. */
  readonly wire: ApiName | null;
  /** The name of the client key that made it (only that key reads it back: routes/responses-store.ts). */
  readonly key?: string | null;
  /** Epoch seconds it was made. */
  readonly createdAt?: number;
  /** The `sticky` session it was made in (hashed: pipeline/session.ts); absent in entries of earlier versions. */
  readonly session?: string;
  /** Every input item of the conversation up to this response (the previous ones expanded). */
  readonly input: readonly unknown[];
  readonly output: readonly unknown[];
}

export type ContinuationMark = 'pinned' | 'rebuilt' | 'migrated';

const pinKey = (id: string): string => `resp:${id}`;

/** A request's `input` as items (a string prompt is one user message). */
function itemsOf(input: unknown): unknown[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  return Array.isArray(input) ? input : [];
}

/** An item as another account may take it: no opaque reasoning, no ids of the owner's stored items. */
function portable(item: unknown): unknown | null {
  if (!item || typeof item !== 'object' || Array.isArray(item)) return item;
  const o = item as Obj;
  if (o['type'] === 'reasoning' && (o['encrypted_content'] !== undefined || !Array.isArray(o['content']))) return null;
  const { id: _id, ...rest } = o;
  return rest;
}

/** A journal entry's text, read; undefined when absent or damaged (a damaged entry is no entry). */
function parseEntry(text: string | undefined): JournalEntry | undefined {
  if (text === undefined || text === '') return undefined;
  try {
    const parsed = JSON.parse(text) as JournalEntry;
    return parsed?.v === 1 && Array.isArray(parsed.input) && Array.isArray(parsed.output) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** A journalled response as `GET /v1/responses/{id}` shows it (routes/responses-store.ts), or undefined. */
export async function readJournal(store: ResponseJournal, id: string): Promise<JournalEntry | undefined> {
  return parseEntry(await store.getJournal(id));
}

/** Forgets a response: its journal entry and its owner pin (`DELETE /v1/responses/{id}`). */
export async function forgetResponse(store: ResponseJournal, id: string): Promise<void> {
  await Promise.all([store.putJournal(id, '', 1), store.setPin(pinKey(id), '', 1)]);
}

export type { JournalEntry };

export class Continuation {
  private constructor(
    readonly previousId: string,
    /** The owner's target key, when the gateway pinned one. */
    readonly owner: string | undefined,
    private readonly entry: JournalEntry | undefined,
  ) {}

  /**
   * Reads the pin and the journal of `body.previous_response_id` (one of each, in parallel).
   * @returns null when the request continues nothing.
   */
  static async open(store: ResponseJournal, body: Readonly<Obj>): Promise<Continuation | null> {
    const id = body['previous_response_id'];
    if (typeof id !== 'string' || id === '') return null;
    const read = (): Promise<[string | undefined, string | undefined]> => Promise.all([store.getPin(pinKey(id)), store.getJournal(id)]);
    let [owner, text] = await read();
    // The replica that answered the previous turn writes its record as the answer ends: a
    // follow-up sent the moment it arrived may come first. One more look, a moment later.
    if (owner === undefined && text === undefined)
      [owner, text] = await new Promise<[string | undefined, string | undefined]>((r) => setTimeout(() => void read().then(r), RECORD_RACE_MS));
    const entry = parseEntry(text);
    return new Continuation(id, owner ?? entry?.target ?? undefined, entry);
  }

  /**
   * `model` narrowed to the targets that can serve the follow-up: any when it is journalled;
   * else the owner, or (owner unknown) every target reached over the Responses API.
   * @throws GatewayError 400 `previous_response_not_found` when none can.
   */
  narrow(model: Model, wireOf: (t: Target) => ApiName | null): Model {
    if (this.entry) return model;
    // Without the journal only a Responses account that keeps the response can continue it.
    const targets = model.targets.filter((t) => wireOf(t) === 'responses' && (this.owner === undefined || t.key === this.owner));
    if (targets.length === 0) {
      const why =
        this.owner !== undefined
          ? 'the gateway made it but did not journal it (its conversation was larger than the journal keeps, or the entry expired), and the account that made it keeps no responses'
          : 'the gateway has no journal of it (it expired, or was not made through this gateway)';
      throw new GatewayError('GW_ERR_PREVIOUS_RESPONSE_NOT_FOUND', {
        param: 'previous_response_id',
        message: `Previous response with id '${this.previousId.slice(0, 128)}' not found: ${why}, and no account of \`${model.name}\` can look it up. Send the conversation as input instead.`,
      });
    }
    return targets.length === model.targets.length ? model : Object.freeze({ ...model, targets: Object.freeze(targets) });
  }

  /** `narrow`, or null when no target of `model` can serve the follow-up (a fallback left out). */
  narrowOrNull(model: Model, wireOf: (t: Target) => ApiName | null): Model | null {
    try {
      return this.narrow(model, wireOf);
    } catch {
      return null;
    }
  }

  /** The body one attempt sends, and how it continues the conversation. */
  bodyFor(body: Readonly<Obj>, target: Target, wire: ApiName): { body: Obj; mark: ContinuationMark } {
    const stored = body['store'] !== false;
    if (target.key === this.owner && wire === 'responses' && (stored || !this.entry)) return { body: { ...body }, mark: 'pinned' };
    if (!this.entry) return { body: { ...body }, mark: 'pinned' }; // narrow() left only the owner, or accounts that may know it
    const same = target.key === this.entry.target;
    const verbatim = same || this.entry.target === null;
    const history = [...this.entry.input, ...this.entry.output].map((i) => (verbatim ? i : portable(i))).filter((i) => i !== null);
    const { previous_response_id: _prev, ...rest } = body;
    return { body: { ...rest, input: [...history, ...itemsOf(body['input'])] }, mark: this.entry.wire === 'responses' && !same ? 'migrated' : 'rebuilt' };
  }

  /**
   * The session the continued response was made in, when the gateway journalled it and the
   * same client key (`keyName`) made it; undefined otherwise (pipeline/session.ts).
   */
  sessionFor(keyName: string | null): string | undefined {
    return this.entry && (this.entry.key ?? null) === keyName ? this.entry.session : undefined;
  }

  /** The whole conversation's input as this request sends it (for its own journal entry). */
  expandedInput(body: Readonly<Obj>): unknown[] {
    return this.entry ? [...this.entry.input, ...this.entry.output, ...itemsOf(body['input'])] : itemsOf(body['input']);
  }
}

/**
 * Pins an answered response to its target and journals it, off the response path (the
 * store calls never reject). `input`: the conversation's input items (`Continuation.expandedInput`,
 * or the request's own); `session`: the session its follow-ups belong to (pipeline/session.ts).
 */
export function recordResponse(
  store: ResponseJournal,
  ttlMs: number,
  made: { answer: ResponseAnswer; target: Target; wire: ApiName; input: readonly unknown[]; key: string | null; session: string },
): void {
  const { answer, target, wire, input, key, session } = made;
  void store.setPin(pinKey(answer.id), target.key, ttlMs);
  const entry: JournalEntry = { v: 1, target: target.key, wire, key, createdAt: Math.floor(Date.now() / 1000), session, input, output: answer.output };
  const text = JSON.stringify(entry);
  if (text.length <= JOURNAL_ENTRY_MAX) void store.putJournal(answer.id, text, ttlMs);
}

/**
 * Journals a warmup (`generate: false`) as `id`, with no owner and no output, off the
 * response path: a follow-up naming it is rebuilt from `input` for any account.
 */
export function recordWarmup(
  store: ResponseJournal,
  ttlMs: number,
  made: { id: string; input: readonly unknown[]; key: string | null; session: string },
): void {
  const entry: JournalEntry = {
    v: 1,
    target: null,
    wire: null,
    key: made.key,
    createdAt: Math.floor(Date.now() / 1000),
    session: made.session,
    input: made.input,
    output: [],
  };
  const text = JSON.stringify(entry);
  if (text.length <= JOURNAL_ENTRY_MAX) void store.putJournal(made.id, text, ttlMs);
}

/** The client's `input` as items (for a request that continues nothing). */
export const inputItems = itemsOf;

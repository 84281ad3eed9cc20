/**
 * The support matrix: which client API can be served over which wire API, and by which
 * translator. Routing asks it which of a model's targets can serve a request (a target
 * whose upstream speaks no wire API this client API can be translated to is left out);
 * the table in docs/translation.md is checked against it by a test (test/unit/support-matrix.test.ts).
 *
 * Rows are client APIs, columns wire APIs. A missing cell is a pair the gateway cannot
 * bridge (yet). When an upstream speaks several wire APIs, `wireFor` picks the first in
 * the row's preference order: the client's own API first (passthrough loses nothing).
 */
import { API_NAMES, type ApiName } from '../apis/names.js';
import { chatToMessages } from './chat-messages/index.js';
import { chatToResponses } from './chat-responses/index.js';
import { chatToChat } from './passthrough/chat.js';
import { messagesToChat } from './messages-chat/index.js';
import { messagesToResponses } from './messages-responses/index.js';
import { messagesToMessages } from './passthrough/messages.js';
import { responsesToResponses } from './passthrough/responses.js';
import { responsesToChat } from './responses-chat/index.js';
import { responsesToMessages } from './responses-messages/index.js';
import { withCacheBreakpoints } from './messages-cache.js';
import type { Translator, TranslatorContext, TranslatorFactory } from './types.js';

/** `TRANSLATORS[client][wire]`, in preference order within each row. */
export const TRANSLATORS: Readonly<Record<ApiName, Readonly<Partial<Record<ApiName, TranslatorFactory>>>>> = {
  chat: { chat: chatToChat, messages: chatToMessages, responses: chatToResponses },
  responses: { responses: responsesToResponses, chat: responsesToChat, messages: responsesToMessages },
  messages: { messages: messagesToMessages, chat: messagesToChat, responses: messagesToResponses },
};

/**
 * The wire API a client API is served over by an upstream speaking `wires`, or null when
 * none of them can be bridged.
 */
export function wireFor(client: ApiName, wires: ReadonlySet<ApiName>): ApiName | null {
  for (const wire of Object.keys(TRANSLATORS[client]) as ApiName[]) if (wires.has(wire)) return wire;
  return null;
}

/**
 * The translator for one attempt. Every Messages wire request it makes gets prompt-cache
 * breakpoints when it carries none, unless `ctx.cacheBreakpoints` is `off` (messages-cache.ts).
 * @throws Error when the pair is not in the table (callers check `wireFor` first).
 */
export function translator(client: ApiName, wire: ApiName, ctx: TranslatorContext): Translator {
  const make = TRANSLATORS[client][wire];
  if (!make) throw new Error(`no translator from ${client} to ${wire}`);
  const tr = make(ctx);
  if (wire !== 'messages' || ctx.cacheBreakpoints === 'off') return tr;
  const request = tr.request;
  tr.request = (body) => {
    const wired = request(body);
    return { ...wired, body: withCacheBreakpoints(wired.body) };
  };
  return tr;
}

/** Every supported (client, wire) pair, in table order, with whether it is a passthrough. */
export function supportedPairs(): { client: ApiName; wire: ApiName; passthrough: boolean }[] {
  const out: { client: ApiName; wire: ApiName; passthrough: boolean }[] = [];
  for (const client of API_NAMES) {
    for (const wire of API_NAMES) if (TRANSLATORS[client][wire]) out.push({ client, wire, passthrough: client === wire });
  }
  return out;
}

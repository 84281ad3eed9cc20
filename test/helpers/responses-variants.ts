/**
 * Responses API streams derived from a recording (test/fixtures), for the bridges' unit
 * tests: the same answer with a function call's arguments sent whole instead of as deltas
 * (as some Responses servers do), or with the completion changed. Each variant keeps the
 * recording's events and bytes except what its label says.
 */
import { readSse, sseBody, type Obj } from './recording-catalog.js';

/** A recorded stream's events, parsed (comments left out). */
export function recordedEvents(name: string): Obj[] {
  return readSse(sseBody(name).toString('utf8'))
    .filter((e) => e.data !== null)
    .map((e) => JSON.parse(e.data!) as Obj);
}

/** Events framed as a Responses server sends them. */
export function framed(events: readonly Obj[]): Buffer {
  return Buffer.from(events.map((e) => `event: ${String(e['type'])}\ndata: ${JSON.stringify(e)}\n\n`).join(''), 'utf8');
}

const is =
  (type: string) =>
  (e: Obj): boolean =>
    e['type'] === type;
const not =
  (...types: string[]) =>
  (e: Obj): boolean =>
    !types.includes(e['type'] as string);

/**
 * The ways a server may send a function call's arguments whole, from a recording whose calls
 * stream their arguments as deltas. Each variant holds the same arguments (the recording's).
 */
export function wholeArgumentVariants(name: string): { label: string; body: Buffer }[] {
  const events = recordedEvents(name);
  const argsOf = new Map<unknown, string>();
  for (const e of events) if (is('response.function_call_arguments.done')(e)) argsOf.set(e['output_index'], e['arguments'] as string);
  const withArgsAdded = events.map((e) => {
    if (!is('response.output_item.added')(e) || !argsOf.has(e['output_index'])) return e;
    return { ...e, item: { ...(e['item'] as Obj), arguments: argsOf.get(e['output_index']) } };
  });
  const noDeltas = not('response.function_call_arguments.delta');
  const callAdded = (e: Obj): boolean => is('response.output_item.added')(e) && (e['item'] as Obj)['type'] === 'function_call';
  return [
    { label: 'arguments whole in output_item.added (and again in the .done events)', body: framed(withArgsAdded.filter(noDeltas)) },
    { label: 'arguments only in function_call_arguments.done (and output_item.done)', body: framed(events.filter(noDeltas)) },
    {
      label: 'arguments only in output_item.done',
      body: framed(events.filter(not('response.function_call_arguments.delta', 'response.function_call_arguments.done'))),
    },
    {
      label: 'no output_item.added: the call whole in output_item.done',
      body: framed(events.filter((e) => !callAdded(e) && noDeltas(e) && !is('response.function_call_arguments.done')(e))),
    },
  ];
}

/** The recording's stream ended by `response.incomplete` for `max_output_tokens` instead of `response.completed`. */
export function incompleteVariant(name: string): Buffer {
  return framed(
    recordedEvents(name).map((e) => {
      if (!is('response.completed')(e)) return e;
      const response = { ...(e['response'] as Obj), status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
      return { ...e, type: 'response.incomplete', response };
    }),
  );
}

/** The final response object of a recorded stream (`response.completed`). */
export function completedResponse(name: string): Obj {
  return recordedEvents(name).find(is('response.completed'))!['response'] as Obj;
}

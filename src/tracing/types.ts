/**
 * What the model-call pipeline asks of tracing: a span per model call, one per upstream
 * attempt inside it, and the `traceparent` the attempt's upstream request carries. Tracing
 * off is `TRACING_OFF` (off.ts): constant objects and no OpenTelemetry SDK module loaded.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Provider } from '../providers/types.js';
import type { RequestRecord } from '../record/request.js';
import type { Attempt } from '../router/attempt.js';
import type { Failure } from '../translate/types.js';
import type { Usage } from '../usage/usage.js';

export interface Tracing {
  /** True when spans are made and exported. */
  readonly enabled: boolean;
  /**
   * Opens the span of one model call.
   * @param headers the client's request headers (`traceparent`, `tracestate` are read: W3C Trace Context).
   * @param startedAt epoch ms the request arrived (the span's start).
   * @param api the client API (`chat`, `responses`, `messages`).
   * @param model the model the client asked for.
   */
  modelCall(headers: IncomingHttpHeaders, startedAt: number, api: string, model: string): CallSpan;
  /** Exports the spans still buffered and stops; idempotent, never rejects. */
  shutdown(): Promise<void>;
}

/** One model call's span. */
export interface CallSpan {
  /** Opens the span of one upstream attempt (a child of the call's span). */
  attempt(attempt: Attempt, provider: Provider | undefined): AttemptSpan;
  /** Ends the call's span with its finished record (attributes from it); once. */
  end(rec: RequestRecord): void;
}

/** One upstream attempt's span. */
export interface AttemptSpan {
  /** Headers the upstream request carries (`traceparent`, maybe `tracestate`), or none. */
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** The upstream's HTTP status, once its response headers arrived. */
  responded(status: number): void;
  /** Ends the span with what the attempt came to; once. */
  end(outcome: AttemptEnd): void;
}

/**
 * What an attempt came to: `pipeline/outcome.ts`'s `AttemptOutcome` fits it as it is, and
 * `threw` stands for an attempt that ended in an unexpected error.
 */
export type AttemptEnd =
  | { readonly kind: 'answered'; readonly relayed: { readonly usage: Usage | null; readonly failure: Failure | null } }
  | { readonly kind: 'failed'; readonly failure: Failure }
  | { readonly kind: 'refused'; readonly error: { readonly openaiCode: string | null; readonly status: number } }
  | { readonly kind: 'aborted' }
  | { readonly kind: 'threw' };

/**
 * The values one model call's steps hand each other: what a relay did, what an attempt came
 * to, and how the whole request ended (the one input of `finish`).
 */
import type { PriceConfig } from '../config/schema.js';
import type { Model } from '../config/types.js';
import type { Admission } from '../limits/index.js';
import type { Attempt, RouteRun } from '../router/run.js';
import type { GatewayError } from '../errors/codes.js';
import type { Outcome } from '../record/request.js';
import type { ApiName } from '../apis/names.js';
import type { Failure, ResponseAnswer } from '../translate/types.js';
import type { Usage } from '../usage/usage.js';

/** What relaying one upstream answer did. */
export interface Relayed {
  /** Whether anything reached the client (then no other attempt is possible). */
  readonly committed: boolean;
  /** Why the answer did not complete; null when it did (or when `aborted`). */
  readonly failure: Failure | null;
  /** The abort reason when the client left or the gateway shut down first. */
  readonly aborted: unknown;
  /** Null when there is nothing to count (nothing was generated). */
  readonly usage: Usage | null;
  /** The usage was counted by the gateway (tokenizer), not reported by the upstream. */
  readonly estimated: boolean;
  readonly ttftMs: number | null;
  /**
   * Settles once the upstream body closed, when the answer was delivered before the upstream
   * ended it (pipeline/relay-sse.ts): the attempt's slot is held until then, since the
   * provider still counts the call (absent: the body is already done).
   */
  readonly drained?: Promise<void>;
}

/** What one attempt came to. */
export type AttemptOutcome =
  /** An answer went out (a stream may have ended with an error event: `relayed.failure`). */
  | { readonly kind: 'answered'; readonly relayed: Relayed; readonly answer?: ResponseAnswer | null; readonly wire?: ApiName }
  /** Nothing went out: the route may try another target. */
  /** `retryAfterMs`: the upstream's named wait, capped at routing.retry_after_cap_ms; `beyondCap`: it named a longer one. */
  | { readonly kind: 'failed'; readonly failure: Failure; readonly retryAfterMs?: number; readonly beyondCap?: boolean }
  /** The request cannot be sent as it is (a parameter the model rejects, a shape the wire API cannot express): answered as is. */
  | { readonly kind: 'refused'; readonly error: GatewayError }
  /** The client left, or the gateway shut down, during the attempt. */
  | { readonly kind: 'aborted'; readonly relayed: Relayed };

/** Where a request was (last) routed. */
export interface Served {
  readonly model: string;
  readonly upstream: string;
  readonly upstreamModel: string;
}

/** How a request ended: everything `finish` needs besides the call itself. */
export interface Ending {
  readonly status: number;
  readonly outcome: Outcome;
  readonly errorClass: string | null;
  /** The configured model the client's id names (aliases resolved), once known. */
  readonly model: string | null;
  readonly served: Served | null;
  readonly usage: Usage | null;
  readonly estimated: boolean;
  readonly ttftMs: number | null;
  readonly attempts: number;
  readonly fallback: string | null;
  readonly shed: string | null;
  /** Cache affinity's decision for a session's request (router/affinity.ts). */
  readonly cache?: 'warm' | 'moved' | 'cold';
  /** USD per 1M tokens of the target that served, for the cost. */
  readonly price: Required<PriceConfig> | null;
  /** The provider kind (`upstreams[].provider`) of the target that served, for the key's `tpm` (limits/key-take.ts tpmTokens); null: none. */
  readonly provider: string | null;
}

/** What the call got to, for its ending: filled in as it goes. */
export interface Progress {
  /** The configured model the client's id names, once found (also when this API cannot reach it). */
  named: string | null;
  /** That model as the client API can reach it, once admitted to routing. */
  model: Model | null;
  admission: Admission | null;
  route: RouteRun | null;
  attempt: Attempt | null;
}

/**
 * The last finished requests of one gateway, kept in memory for the admin console
 * (`GET /console`). A fixed-size ring buffer: pushing is O(1) and never allocates beyond
 * the capacity. Each entry is a copy of the fields the console shows, taken field by field
 * from the request record: the key's NAME (never the key), no headers, no prompt and no
 * completion. Per replica, lost on restart; metrics and logs stay the durable record.
 */
import type { Metrics } from '../metrics/registry.js';
import type { RequestRecord } from './request.js';

/** One finished request as the console shows it. */
export interface RecentRequest {
  /** Epoch ms when the request finished. */
  readonly finishedAt: number;
  readonly requestId: string;
  /** The client key's configured name, null when the request had no valid key. */
  readonly key: string | null;
  readonly model: string | null;
  readonly upstream: string | null;
  readonly upstreamModel: string | null;
  readonly stream: boolean;
  readonly status: number;
  readonly outcome: RequestRecord['outcome'];
  readonly errorClass: string | null;
  readonly attempts: number;
  readonly durationMs: number;
  readonly ttftMs: number | null;
  readonly tokens: { readonly input: number; readonly cached: number; readonly output: number; readonly reasoning: number };
  readonly tokensEstimated: boolean;
  readonly costUsd: number;
  readonly fallback: string | null;
  readonly shed: string | null;
}

/** Entries kept per gateway by default. */
export const RECENT_CAPACITY = 200;

/** A ring buffer of the last finished requests, newest last. */
export class RecentRequests {
  private readonly items: (RecentRequest | undefined)[];
  private next = 0;
  private count = 0;
  private pushed = 0;

  constructor(readonly capacity: number = RECENT_CAPACITY) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    this.items = new Array<RecentRequest | undefined>(capacity);
  }

  /** Requests pushed since the gateway started (not only those still held). */
  get total(): number {
    return this.pushed;
  }

  /** Copies what the console shows of a finished request; the oldest entry goes when full. */
  push(rec: RequestRecord, finishedAt: number = Date.now()): void {
    const u = rec.usage;
    this.items[this.next] = {
      finishedAt,
      requestId: rec.requestId,
      key: rec.key,
      model: rec.model,
      upstream: rec.upstream,
      upstreamModel: rec.upstreamModel,
      stream: rec.stream,
      status: rec.status,
      outcome: rec.outcome,
      errorClass: rec.errorClass,
      attempts: rec.attempts,
      durationMs: rec.durationMs,
      ttftMs: rec.ttftMs,
      tokens: { input: u.input, cached: u.cached, output: u.output, reasoning: u.reasoning },
      tokensEstimated: rec.usageEstimated,
      costUsd: rec.costUsd,
      fallback: rec.fallback,
      shed: rec.shed,
    };
    this.next = (this.next + 1) % this.capacity;
    this.count = Math.min(this.count + 1, this.capacity);
    this.pushed++;
  }

  /** Up to `limit` entries, newest first. */
  list(limit: number = this.capacity): RecentRequest[] {
    const n = Math.max(0, Math.min(limit, this.count));
    const out: RecentRequest[] = [];
    for (let i = 1; i <= n; i++) out.push(this.items[(this.next - i + this.capacity) % this.capacity]!);
    return out;
  }
}

const byGateway = new WeakMap<Metrics, RecentRequests>();

/**
 * The ring buffer of the gateway that owns `metrics` (each gateway has its own metrics
 * registry, so several gateways in one process keep separate buffers). Created on first use.
 */
export function recentRequests(metrics: Metrics): RecentRequests {
  let r = byGateway.get(metrics);
  if (!r) byGateway.set(metrics, (r = new RecentRequests()));
  return r;
}

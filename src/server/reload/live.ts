/**
 * The gateway's swappable state for hot reload. A generation is one config with the
 * KeyStore, Router and providers built for it. A request holds the generation current when
 * it started until it finishes, so a reload never changes the config, router or provider
 * under a request in flight. A provider is closed once no generation still in use has it:
 * the provider of a removed or changed upstream closes after the last request using it
 * finishes (and undici's `Pool.close()` itself waits for requests still on the pool).
 */
import type { KeyStore } from '../../auth/keys.js';
import type { GatewayConfig } from '../../config/types.js';
import type { Provider } from '../../providers/types.js';
import type { Router } from '../../router/index.js';

export interface Generation {
  readonly config: GatewayConfig;
  readonly keys: KeyStore;
  readonly router: Router;
  readonly providers: ReadonlyMap<string, Provider>;
}

/**
 * A generation held by one request; `release()` (idempotent) when the request is done, called
 * as a method (`held.release()`): it is not bound, so pass `() => held.release()` as a callback.
 */
export interface Held extends Generation {
  release(): void;
}

interface Entry {
  readonly gen: Generation;
  refs: number;
}

/**
 * One request's hold: a class, so each is one fixed-shape object rather than a spread copy of
 * the generation and a closure. Its own state is in private fields, so a copy or a log of a
 * hold carries the generation's four members only.
 */
class Hold implements Held {
  readonly config: GatewayConfig;
  readonly keys: KeyStore;
  readonly router: Router;
  readonly providers: ReadonlyMap<string, Provider>;
  readonly #state: LiveState;
  readonly #entry: Entry;
  #released = false;

  constructor(state: LiveState, entry: Entry) {
    const gen = entry.gen;
    this.config = gen.config;
    this.keys = gen.keys;
    this.router = gen.router;
    this.providers = gen.providers;
    this.#state = state;
    this.#entry = entry;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#state.unhold(this.#entry);
  }
}

export class LiveState {
  private cur: Entry;
  /** Superseded generations that requests still hold. */
  private readonly retired = new Set<Entry>();
  private readonly closing = new Set<Provider>();

  constructor(
    first: Generation,
    private readonly onCloseError: (err: unknown) => void = () => {},
  ) {
    this.cur = { gen: first, refs: 0 };
  }

  /** The generation new requests use. */
  get current(): Generation {
    return this.cur.gen;
  }

  /** Superseded generations still held by requests in flight. */
  get draining(): number {
    return this.retired.size;
  }

  /** Pins the current generation for one request. */
  hold(): Held {
    const entry = this.cur;
    entry.refs++;
    return new Hold(this, entry);
  }

  /** A hold of `entry` ended: the generation's unused providers close once it is retired and unheld. */
  unhold(entry: Entry): void {
    entry.refs--;
    if (entry.refs === 0 && entry !== this.cur) this.sweep();
  }

  /** Makes `next` current at once; the old generation's unused providers close when it drains. */
  swap(next: Generation): void {
    this.retired.add(this.cur);
    this.cur = { gen: next, refs: 0 };
    this.sweep();
  }

  private sweep(): void {
    const candidates: Provider[] = [];
    for (const e of this.retired) {
      if (e.refs > 0) continue;
      this.retired.delete(e);
      candidates.push(...e.gen.providers.values());
    }
    if (candidates.length === 0) return;
    const inUse = new Set(this.cur.gen.providers.values());
    for (const e of this.retired) for (const p of e.gen.providers.values()) inUse.add(p);
    for (const p of candidates) {
      if (inUse.has(p) || this.closing.has(p)) continue;
      this.closing.add(p);
      p.close().catch(this.onCloseError);
    }
  }

  /** Closes every provider not closed yet (shutdown). */
  async closeAll(): Promise<void> {
    const all = new Set<Provider>(this.cur.gen.providers.values());
    for (const e of this.retired) for (const p of e.gen.providers.values()) all.add(p);
    const pending = [...all].filter((p) => !this.closing.has(p));
    for (const p of pending) this.closing.add(p);
    await Promise.allSettled(pending.map((p) => p.close()));
  }
}

/**
 * The models one request's route walks (router/run.ts): the model asked for, then its
 * fallbacks, each model's targets tried once; and the moves the shed ladder makes on it
 * (another reasoning model of the chain, a model put in next, a model gone below to).
 */
import type { Model, Target } from '../config/types.js';

export class ModelChain {
  private models: Model[];
  private idx = 0;
  /** Targets tried on the current pass over the current model (keys). */
  readonly tried = new Set<string>();

  /**
   * @param first the model asked for (or its context fallback).
   * @param fallbacks its fallback models, resolved (a name the API cannot reach: undefined, left out).
   */
  constructor(first: Model, fallbacks: readonly (Model | undefined)[]) {
    const models = [first];
    for (const m of fallbacks) if (m && !models.includes(m)) models.push(m);
    this.models = models;
  }

  /** The model the route is on. */
  get current(): Model {
    return this.models[this.idx]!;
  }
  /** The model asked for. */
  get first(): Model {
    return this.models[0]!;
  }
  /** Whether the route is past the model asked for (a fallback, or a model the ladder moved to). */
  get onFallback(): boolean {
    return this.idx > 0;
  }
  /** The models after the current one. */
  later(): Model[] {
    return this.models.slice(this.idx + 1);
  }
  /** Every target of every model of the chain. */
  targets(): Target[] {
    return this.models.flatMap((m) => m.targets);
  }
  /** The current model's targets not tried yet on this pass. */
  untried(): Target[] {
    // A loop rather than filter with a closure: called on every pass of every request.
    const out: Target[] = [];
    for (const t of this.current.targets) if (!this.tried.has(t.key)) out.push(t);
    return out;
  }

  /** Moves on to the next model of the chain, if any; returns whether it did. */
  advance(): boolean {
    if (this.idx + 1 >= this.models.length) return false;
    this.idx++;
    this.tried.clear();
    return true;
  }
  /** A new round: back to the model asked for alone (fallbacks are done for this request). */
  restart(): void {
    this.models = [this.models[0]!];
    this.idx = 0;
    this.tried.clear();
  }
  /**
   * The shed ladder moved the route to `to`: with `reasoning`, on to that model, later in the
   * chain (another reasoning model); otherwise `to` takes the current model's place (and
   * leaves its later one, if it was there).
   */
  moveTo(to: Model, reasoning: boolean): void {
    if (reasoning) this.idx = this.models.indexOf(to, this.idx + 1);
    else this.models = [...this.models.slice(0, this.idx), to, ...this.models.slice(this.idx + 1).filter((m) => m !== to)];
    this.tried.clear();
  }
}

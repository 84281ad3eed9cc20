/**
 * The metrics of the gateway's own failures, kept apart from the upstreams' so that a bug or
 * a limit of ours never pages the people who look after a provider account
 * (`switchyard_upstream_errors_total` counts only what an upstream said or did). In a file of
 * its own because registry.ts is at its size cap; registry.ts creates them on its registry.
 */
import { Counter, type Registry } from 'prom-client';

export interface GuardMetrics {
  /** Attempts that failed inside the gateway (a thrown error with no network code), by public model. */
  readonly gatewayErrors: Counter<'model'>;
}

/** Creates the guard metrics on `registers`. */
export function createGuardMetrics(registers: Registry[]): GuardMetrics {
  return {
    gatewayErrors: new Counter({
      name: 'switchyard_gateway_errors_total',
      help: 'Attempts that failed inside the gateway itself (answered 500 internal_error; no upstream blamed, none cooled), by public model.',
      labelNames: ['model'],
      registers,
    }),
  };
}

/**
 * Tracing for the gateway (docs/observability.md, "OpenTelemetry"): off unless an OTLP endpoint is set
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). Off, the pipeline
 * gets `TRACING_OFF` and the OpenTelemetry SDK is never loaded; on, otel.ts is
 * imported and starts the SDK.
 */
import type { Logger } from 'pino';
import { TRACING_OFF } from './off.js';
import { tracingSettings } from './settings.js';
import type { Tracing } from './types.js';

export type { AttemptEnd, AttemptSpan, CallSpan, Tracing } from './types.js';
export { TRACING_OFF } from './off.js';

/**
 * The tracing the environment asks for. A bad setting is logged as a warning (naming the
 * variable, never a header value) and falls back to the default or to off; never throws.
 * @param env the process environment (OTEL_* variables, see settings.ts).
 * @param version the gateway's version, for `service.version`.
 */
export async function startTracing(env: NodeJS.ProcessEnv, log: Logger, version: string): Promise<Tracing> {
  const { settings, warnings } = tracingSettings(env);
  for (const w of warnings) log.warn(`tracing: ${w}`);
  if (!settings) return TRACING_OFF;
  try {
    const { startOtel } = await import('./otel.js');
    return await startOtel(settings, log, version);
  } catch (err) {
    log.warn({ error: String((err as Error)?.message ?? err).slice(0, 300) }, 'tracing could not start; it is off');
    return TRACING_OFF;
  }
}

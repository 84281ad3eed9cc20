/**
 * Tracing on: the official OpenTelemetry JS SDK, set up by hand rather than by
 * `@opentelemetry/sdk-node` (no auto-instrumentation: the gateway makes its spans itself,
 * spans.ts). A `BasicTracerProvider` with a `BatchSpanProcessor` feeding the OTLP/HTTP
 * exporter (protobuf or JSON), the sampler and resource from the environment (settings.ts),
 * and the W3C Trace Context propagator. Nothing is registered globally, so several gateways
 * in one process (tests, embedding) each keep their own provider.
 *
 * Loaded with a dynamic `import()` only when tracing is on (index.ts).
 */
import { W3CTraceContextPropagator, type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { Logger } from 'pino';
import type { SamplerSettings, TracingSettings } from './settings.js';
import { shownUrl } from './settings.js';
import { openCallSpan } from './spans.js';
import type { Tracing } from './types.js';

/** Longest wait for the last spans to be exported when the gateway closes, ms (within main.ts's shutdown margin). */
const SHUTDOWN_MS = 3_000;
/** At most one "export failed" warning per this long, ms. */
const WARN_EVERY_MS = 60_000;

function makeSampler(s: SamplerSettings): Sampler {
  const root = s.root === 'always_on' ? new AlwaysOnSampler() : s.root === 'always_off' ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(s.ratio);
  return s.parentBased ? new ParentBasedSampler({ root }) : root;
}

/** The OTLP/HTTP exporter for the protocol (each package loaded only when used). */
async function makeExporter(s: TracingSettings): Promise<SpanExporter> {
  const config = { url: s.url, headers: { ...s.headers }, timeoutMillis: s.timeoutMs };
  if (s.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter(config);
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter(config);
}

/**
 * Wraps an exporter so a failed export is logged (at most once a minute, with the count of
 * spans lost); the SDK itself reports failures only to its `diag` logger, unset here. The
 * message is the exporter's (a status or a network error), never the headers.
 */
function logged(exporter: SpanExporter, log: Logger): SpanExporter {
  let lastWarn = 0;
  let lost = 0;
  return {
    export(spans: ReadableSpan[], done: (r: ExportResult) => void): void {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) {
          lost += spans.length;
          const now = Date.now();
          if (now - lastWarn >= WARN_EVERY_MS) {
            lastWarn = now;
            log.warn({ spans_lost: lost, error: String(result.error?.message ?? 'export failed').slice(0, 300) }, 'exporting trace spans failed');
            lost = 0;
          }
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * Starts the SDK for `settings`.
 * @param version the gateway's version (`service.version`).
 */
export async function startOtel(settings: TracingSettings, log: Logger, version: string): Promise<Tracing> {
  const exporter = logged(await makeExporter(settings), log);
  const resource = defaultResource().merge(resourceFromAttributes({ ...settings.resource, 'service.name': settings.serviceName, 'service.version': version }));
  const provider = new BasicTracerProvider({
    resource,
    sampler: makeSampler(settings.sampler),
    spanProcessors: [new BatchSpanProcessor(exporter, settings.batch)],
  });
  const tracer = provider.getTracer('switchyard', version);
  const propagator = new W3CTraceContextPropagator();
  log.info({ endpoint: shownUrl(settings.url), protocol: settings.protocol, service_name: settings.serviceName }, 'tracing on: spans go to the OTLP endpoint');
  let stopped: Promise<void> | null = null;
  return {
    enabled: true,
    modelCall: (headers, startedAt, api, model) => openCallSpan(tracer, propagator, headers, startedAt, api, model),
    shutdown() {
      stopped ??= (async () => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_MS)));
        try {
          await Promise.race([provider.shutdown(), late]);
        } catch (err) {
          log.warn({ error: String((err as Error)?.message ?? err).slice(0, 300) }, 'flushing trace spans at shutdown failed');
        } finally {
          clearTimeout(timer);
        }
      })();
      return stopped;
    },
  };
}

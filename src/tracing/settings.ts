/**
 * Reads the tracing settings from the standard OpenTelemetry environment variables
 * (OpenTelemetry specification, "Environment Variable Specification" and "OTLP Exporter
 * Configuration"). Tracing is on only when an OTLP endpoint is set and the SDK is not
 * disabled; everything else has the spec's default. Pure: nothing is loaded or logged here,
 * and no warning quotes a header value or the endpoint's user info.
 */

/** The sampler (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`). */
export interface SamplerSettings {
  /** What a root span (no sampled parent in `traceparent`) gets. */
  readonly root: 'always_on' | 'always_off' | 'traceidratio';
  /** Follow the incoming `traceparent`'s sampled flag (the `parentbased_*` samplers). */
  readonly parentBased: boolean;
  /** `traceidratio`'s ratio, 0..1. */
  readonly ratio: number;
}

export interface TracingSettings {
  /** Where spans are POSTed (the traces URL, `/v1/traces` already appended to a base endpoint). */
  readonly url: string;
  /** The OTLP/HTTP encoding: protobuf (the spec's default) or JSON. */
  readonly protocol: 'http/protobuf' | 'http/json';
  /** Exporter headers (e.g. a collector's auth token): secrets, never logged. */
  readonly headers: Readonly<Record<string, string>>;
  /** One export's time limit, ms. */
  readonly timeoutMs: number;
  /** `service.name` (OTEL_SERVICE_NAME, default `switchyard`). */
  readonly serviceName: string;
  /** More resource attributes (OTEL_RESOURCE_ATTRIBUTES). */
  readonly resource: Readonly<Record<string, string>>;
  readonly sampler: SamplerSettings;
  /** Batch span processor settings (OTEL_BSP_*), each absent when not set (the SDK's default). */
  readonly batch: {
    readonly scheduledDelayMillis?: number;
    readonly maxQueueSize?: number;
    readonly maxExportBatchSize?: number;
    readonly exportTimeoutMillis?: number;
  };
}

/** The settings (null: tracing is off) and what was set wrong (for the start-up log). */
export interface SettingsResult {
  readonly settings: TracingSettings | null;
  readonly warnings: readonly string[];
}

/** The variable's value, trimmed; undefined when unset or empty. */
function read(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name]?.trim();
  return v ? v : undefined;
}

/** The spec's `key1=value1,key2=value2` list (values percent-decoded); a bad entry is skipped, naming only its key. */
export function keyValueList(text: string | undefined, what: string, warnings: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  if (!text) return out;
  for (const entry of text.split(',')) {
    if (entry.trim() === '') continue;
    const eq = entry.indexOf('=');
    const key = (eq < 0 ? entry : entry.slice(0, eq)).trim();
    if (eq <= 0 || key === '') {
      warnings.push(`${what}: an entry without "key=" was skipped`);
      continue;
    }
    try {
      out[key] = decodeURIComponent(entry.slice(eq + 1).trim());
    } catch {
      warnings.push(`${what}: the value of "${key.slice(0, 64)}" is not percent-encoded correctly and was skipped`);
    }
  }
  return out;
}

/** An http(s) URL, shown without user info or query in warnings. */
function httpUrl(text: string, name: string, warnings: string[]): URL | null {
  try {
    const url = new URL(text);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url;
    warnings.push(`${name} must be an http:// or https:// URL (got a ${url.protocol} URL); tracing is off`);
  } catch {
    warnings.push(`${name} is not a URL; tracing is off`);
  }
  return null;
}

/** A whole number >= `min` from the variable, or undefined (with a warning when set but bad). */
function int(env: NodeJS.ProcessEnv, name: string, min: number, warnings: string[]): number | undefined {
  const text = read(env, name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (Number.isInteger(n) && n >= min) return n;
  warnings.push(`${name} must be a whole number >= ${min}, got ${JSON.stringify(text.slice(0, 32))}; the default is used`);
  return undefined;
}

const SAMPLERS: Readonly<Record<string, Omit<SamplerSettings, 'ratio'>>> = {
  always_on: { root: 'always_on', parentBased: false },
  always_off: { root: 'always_off', parentBased: false },
  traceidratio: { root: 'traceidratio', parentBased: false },
  parentbased_always_on: { root: 'always_on', parentBased: true },
  parentbased_always_off: { root: 'always_off', parentBased: true },
  parentbased_traceidratio: { root: 'traceidratio', parentBased: true },
};

function sampler(env: NodeJS.ProcessEnv, warnings: string[]): SamplerSettings {
  const name = (read(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on').toLowerCase();
  let kind = SAMPLERS[name];
  if (!kind) {
    warnings.push(
      `OTEL_TRACES_SAMPLER ${JSON.stringify(name.slice(0, 32))} is not supported (${Object.keys(SAMPLERS).join(', ')}); parentbased_always_on is used`,
    );
    kind = SAMPLERS['parentbased_always_on']!;
  }
  let ratio = 1;
  const arg = read(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (kind.root === 'traceidratio' && arg !== undefined) {
    const n = Number(arg);
    if (Number.isFinite(n) && n >= 0 && n <= 1) ratio = n;
    else warnings.push(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got ${JSON.stringify(arg.slice(0, 32))}; 1 is used`);
  }
  return { ...kind, ratio };
}

/** The traces URL: the signal-specific endpoint as it is, else the base endpoint plus `v1/traces` (OTLP exporter spec). */
function tracesUrl(env: NodeJS.ProcessEnv, warnings: string[]): string | null {
  const specific = read(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (specific !== undefined) return httpUrl(specific, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', warnings)?.href ?? null;
  const base = read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (base === undefined) return null;
  const url = httpUrl(base, 'OTEL_EXPORTER_OTLP_ENDPOINT', warnings);
  if (!url) return null;
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.href;
}

/**
 * The tracing settings from `env`. Off (null) when `OTEL_SDK_DISABLED=true`,
 * `OTEL_TRACES_EXPORTER=none`, no OTLP endpoint is set, the endpoint is not an http(s) URL,
 * or the protocol is one Switchyard does not speak (`grpc`).
 */
export function tracingSettings(env: NodeJS.ProcessEnv): SettingsResult {
  const warnings: string[] = [];
  const off = (): SettingsResult => ({ settings: null, warnings });
  if (read(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return off();
  const exporter = read(env, 'OTEL_TRACES_EXPORTER')?.toLowerCase();
  if (exporter === 'none') return off();
  const url = tracesUrl(env, warnings);
  if (!url) return off();
  if (exporter !== undefined && exporter !== 'otlp')
    warnings.push(`OTEL_TRACES_EXPORTER ${JSON.stringify(exporter.slice(0, 32))} is not supported; spans go to the OTLP endpoint`);
  const protocol = (read(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? read(env, 'OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf').toLowerCase();
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    warnings.push(`OTLP protocol ${JSON.stringify(protocol.slice(0, 32))} is not supported (http/protobuf or http/json); tracing is off`);
    return off();
  }
  const headers = {
    ...keyValueList(read(env, 'OTEL_EXPORTER_OTLP_HEADERS'), 'OTEL_EXPORTER_OTLP_HEADERS', warnings),
    ...keyValueList(read(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'), 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', warnings),
  };
  const timeoutMs = int(env, 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', 1, warnings) ?? int(env, 'OTEL_EXPORTER_OTLP_TIMEOUT', 1, warnings) ?? 10_000;
  const batch: Record<string, number> = {};
  const bsp = (name: string, key: string, min: number): void => {
    const n = int(env, name, min, warnings);
    if (n !== undefined) batch[key] = n;
  };
  bsp('OTEL_BSP_SCHEDULE_DELAY', 'scheduledDelayMillis', 0);
  bsp('OTEL_BSP_MAX_QUEUE_SIZE', 'maxQueueSize', 1);
  bsp('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 'maxExportBatchSize', 1);
  bsp('OTEL_BSP_EXPORT_TIMEOUT', 'exportTimeoutMillis', 1);
  return {
    settings: {
      url,
      protocol,
      headers,
      timeoutMs,
      serviceName: read(env, 'OTEL_SERVICE_NAME') ?? 'switchyard',
      resource: keyValueList(read(env, 'OTEL_RESOURCE_ATTRIBUTES'), 'OTEL_RESOURCE_ATTRIBUTES', warnings),
      sampler: sampler(env, warnings),
      batch,
    },
    warnings,
  };
}

/** The endpoint as it may be logged: scheme, host and path only (no user info, no query). */
export function shownUrl(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

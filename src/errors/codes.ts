/**
 * GatewayError, the error Switchyard throws for an entry of its error table (errors/table.ts).
 */
import { ERRORS, type ErrorCode, type ErrorSpec, type Heals } from './table.js';

/** An error with everything needed to render the client-facing OpenAI error body. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly openaiCode: string | null;
  readonly param: string | null;
  readonly headers: Readonly<Record<string, string>>;
  /** Whether a client's retry can heal it (`Heals`). */
  readonly heals: Heals;

  constructor(
    code: ErrorCode,
    opts: {
      message?: string;
      param?: string | null;
      status?: number;
      /** Overrides for relaying an upstream's own OpenAI-style error. */
      type?: string;
      openaiCode?: string | null;
      headers?: Record<string, string>;
      /** Overrides the table's `heals` (a relayed upstream error, a stop with no wait to name). */
      heals?: Heals;
      cause?: unknown;
    } = {},
  ) {
    const spec: ErrorSpec = ERRORS[code];
    super(opts.message ?? spec.message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = opts.status ?? spec.status;
    this.type = opts.type ?? spec.type;
    this.openaiCode = opts.openaiCode !== undefined ? opts.openaiCode : spec.code;
    this.param = opts.param ?? null;
    this.headers = opts.headers ?? {};
    this.heals = opts.heals ?? spec.heals;
  }

  /**
   * This error as a final answer (`heals: never`): the gateway already tried and gave up, so
   * a client's retry would only repeat its attempts. The same status, body and headers.
   */
  asFinal(): GatewayError {
    if (this.heals === 'never') return this;
    const { code, status, type, openaiCode: oc, param, headers } = this;
    return new GatewayError(code, { message: this.message, status, type, openaiCode: oc, param, headers: { ...headers }, heals: 'never', cause: this.cause });
  }
}

/**
 * PLACEHOLDER until the classifier branch lands: the contract of the one failure classifier.
 */
export type FailureClass =
  | 'rate_limited'
  | 'quota'
  | 'overloaded'
  | 'server'
  | 'timeout'
  | 'stall'
  | 'connect'
  | 'credential'
  | 'permission'
  | 'context_length'
  | 'content_policy'
  | 'bad_request'
  | 'not_found'
  | 'stream'
  | 'bad_response'
  | 'unknown';

export interface Classified {
  readonly class: FailureClass;
  readonly retryable: boolean;
  readonly scope: 'request' | 'target' | 'account';
}

export interface FailureFacts {
  readonly status?: number;
  readonly type?: string | null;
  readonly code?: string | null;
  readonly message?: string | null;
  readonly thrown?: unknown;
  /** A failure the gateway saw itself: an unreadable answer, a stream cut short, no first event in time. */
  readonly local?: 'unreadable' | 'cut' | 'stall';
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const CONNECT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

export function errorCode(err: unknown): string | undefined {
  let cur: unknown = err;
  for (let i = 0; i < 4 && cur && typeof cur === 'object'; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

const c = (cls: FailureClass, retryable: boolean, scope: Classified['scope']): Classified => ({ class: cls, retryable, scope });

export function classifyFailure(f: FailureFacts): Classified {
  if (f.local === 'unreadable') return c('bad_response', true, 'target');
  if (f.local === 'cut') return c('stream', true, 'target');
  if (f.local === 'stall') return c('stall', true, 'target');
  if (f.thrown !== undefined) {
    const code = errorCode(f.thrown);
    if (code && TIMEOUT_CODES.has(code)) return c('timeout', true, 'target');
    if (code && CONNECT_CODES.has(code)) return c('connect', true, 'target');
    return c('unknown', true, 'target');
  }
  const text = `${f.type ?? ''} ${f.code ?? ''}`;
  const status = f.status ?? (f.code && /^\d{3}$/.test(f.code) ? Number(f.code) : undefined);
  if (/insufficient_quota|billing_error/.test(text)) return c('quota', true, 'account');
  if (status === 429) return c('rate_limited', true, 'target');
  if (status === 401) return c('credential', true, 'account');
  if (status === 403) return c('permission', true, 'target');
  if (status === 529 || /overloaded/.test(text)) return c('overloaded', true, 'target');
  if (status === 404) return c('not_found', true, 'target');
  if (status === 408 || (status !== undefined && status >= 500)) return c('server', status === 408 || status < 505 || status === 529, 'target');
  if (status !== undefined && status >= 400) return c('bad_request', false, 'request');
  return c('server', true, 'target');
}

export function isCallerFault(cl: Classified): boolean {
  return cl.scope === 'request';
}

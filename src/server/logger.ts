/**
 * pino logger options: JSON lines, ISO timestamps, asynchronous batched writes off the hot
 * path, and redaction of the places a credential could appear.
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import { allowRecordLines } from '../record/log-line.js';

/**
 * Paths pino replaces with `[redacted]`. Switchyard's own log lines never carry headers or
 * keys; this is defence in depth for error objects and future log calls. Fixed paths
 * only: wildcard paths cost a tree walk on every line.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["api-key"]',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["api-key"]',
  'headers["x-api-key"]',
  'headers.cookie',
  'apiKey',
  'api_key',
  'password',
  'upstream.apiKey',
  'upstream.api_key',
];

let lastMs = -1;
let lastTime = '';

/**
 * pino's `stdTimeFunctions.isoTime` (`,"time":"<ISO 8601 UTC>"`), its text kept for the
 * millisecond it was made in: the lines of one millisecond (several per request at load)
 * share one Date and one string instead of making their own.
 */
export function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

/**
 * Creates the process logger.
 * @param level pino level name.
 * @param stream where lines go; defaults to an asynchronous stdout (flushed on close).
 */
export function createLogger(level: string, stream?: DestinationStream): Logger {
  // Lines are batched into 4 KiB writes, flushed at least every second and on close:
  // one syscall per line was a tenth of the gateway's CPU at 10k requests/s.
  const dest = stream ?? pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 1000 });
  const logger = pino(
    {
      level,
      // pid: with server.workers several processes write lines; it tells them apart.
      base: { service: 'switchyard', pid: process.pid },
      timestamp: isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    dest,
  );
  // REDACT_PATHS match none of the request line's fields: it may skip pino's generic path.
  allowRecordLines(logger);
  return logger;
}

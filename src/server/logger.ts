/**
 * pino logger options: JSON lines, ISO timestamps, asynchronous writes off the hot path,
 * and redaction of every place a credential could appear.
 */
import { pino, type DestinationStream, type Logger } from 'pino';

/** Paths pino replaces with `[redacted]` wherever they appear in a log object. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["api-key"]',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["api-key"]',
  'headers["x-api-key"]',
  '*.apiKey',
  '*.api_key',
  'apiKey',
  'api_key',
  'password',
  '*.password',
];

/**
 * Creates the process logger.
 * @param level pino level name.
 * @param stream where lines go; defaults to an asynchronous stdout (flushed on close).
 */
export function createLogger(level: string, stream?: DestinationStream): Logger {
  const dest = stream ?? pino.destination({ dest: 1, sync: false });
  return pino(
    {
      level,
      base: { service: 'switchyard' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    dest,
  );
}

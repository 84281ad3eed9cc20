/**
 * Requests Node's HTTP parser rejects never reach Fastify's routes or error handler; this
 * answers them on the socket, still with an OpenAI-style error body.
 */
import type { Duplex } from 'node:stream';

/** Answers a request Node's HTTP parser rejected (bad framing, header overflow, timeout). */
export function clientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'The request headers are too large.']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'The request was not received in time.']
        : [400, 'Bad Request', 'The request is not valid HTTP.'];
  const body = JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: null } });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

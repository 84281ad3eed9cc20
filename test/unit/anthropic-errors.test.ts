/**
 * toOpenAIError: Anthropic error bodies (recorded, and built from Anthropic's documented
 * shape) -> the OpenAI status and error body the client gets.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ANTHROPIC_ERROR_MAP, toOpenAIError } from '../../src/translate/chat-messages/errors.js';
import { fixture, fixtureJson } from '../helpers/recordings.js';

const body = (type: string, message: string) => Buffer.from(JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_test' }));

test('recorded 400 invalid_request_error', () => {
  const raw = fixtureJson('anthropic-error-400-invalid-request.json') as { error: { message: string } };
  assert.deepEqual(toOpenAIError(400, fixture('anthropic-error-400-invalid-request.json')), {
    status: 400,
    body: { error: { message: raw.error.message, type: 'invalid_request_error', param: null, code: null } },
  });
});

test('recorded 404 not_found_error about a model -> model_not_found', () => {
  const raw = fixtureJson('anthropic-error-404-not-found.json') as { error: { message: string } };
  assert.deepEqual(toOpenAIError(404, fixture('anthropic-error-404-not-found.json')), {
    status: 404,
    body: { error: { message: raw.error.message, type: 'invalid_request_error', param: null, code: 'model_not_found' } },
  });
  assert.equal(toOpenAIError(404, body('not_found_error', 'File not found: file_123')).body.error.code, null);
});

test('529 overloaded_error -> 503 server_error overloaded', () => {
  assert.deepEqual(toOpenAIError(529, body('overloaded_error', 'Overloaded')), {
    status: 503,
    body: { error: { message: 'Overloaded', type: 'server_error', param: null, code: 'overloaded' } },
  });
});

test('every documented type', () => {
  const cases: [number, string, number, string, string | null][] = [
    [401, 'authentication_error', 401, 'authentication_error', 'invalid_api_key'],
    [402, 'billing_error', 429, 'insufficient_quota', 'insufficient_quota'],
    [403, 'permission_error', 403, 'permission_error', null],
    [413, 'request_too_large', 413, 'invalid_request_error', 'request_too_large'],
    [429, 'rate_limit_error', 429, 'rate_limit_error', 'rate_limit_exceeded'],
    [500, 'api_error', 500, 'server_error', null],
    [504, 'timeout_error', 504, 'server_error', 'timeout'],
  ];
  for (const [status, type, wantStatus, wantType, wantCode] of cases) {
    const out = toOpenAIError(status, body(type, `m-${type}`));
    assert.deepEqual(out, { status: wantStatus, body: { error: { message: `m-${type}`, type: wantType, param: null, code: wantCode } } }, type);
    assert.equal(ANTHROPIC_ERROR_MAP[type]!.status, wantStatus);
  }
});

test('unknown error types keep the status (529 -> 503)', () => {
  assert.deepEqual(toOpenAIError(409, body('conflict_error', 'busy')).status, 409);
  assert.equal(toOpenAIError(409, body('conflict_error', 'busy')).body.error.type, 'invalid_request_error');
  assert.equal(toOpenAIError(529, body('brand_new_error', 'x')).status, 503);
  assert.equal(toOpenAIError(529, body('brand_new_error', 'x')).body.error.type, 'server_error');
});

test('non-JSON bodies get a generic message', () => {
  assert.deepEqual(toOpenAIError(502, Buffer.from('<html>Bad Gateway</html>')), {
    status: 502,
    body: { error: { message: 'The upstream provider returned HTTP 502.', type: 'server_error', param: null, code: null } },
  });
  assert.equal(toOpenAIError(400, Buffer.alloc(0)).body.error.type, 'invalid_request_error');
  assert.equal(toOpenAIError(529, Buffer.from('{"type":"error"}')).status, 503);
});

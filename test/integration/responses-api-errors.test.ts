/**
 * The OpenAI Responses API (`POST /v1/responses`) through Switchyard: upstream errors
 * (before and during the stream) reach the SDK as its own error types, a mid-stream error
 * right after the preamble is not committed, and a bad client key never reaches the
 * upstream.
 *
 * Driven by the official `openai` client against a fake upstream replaying recorded
 * Responses streams and bodies (test/helpers/responses-api.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { APIError, AuthenticationError, BadRequestError } from 'openai';
import { CLIENT_KEY, UPSTREAM_KEY } from '../helpers/gateway.js';
import {
  ERROR_400,
  QUOTA_ERROR,
  REASONING_MODEL,
  TEXT,
  TEXT_MODEL,
  client,
  finishedLineOf,
  gw,
  replaySse,
  upstream,
  useResponsesGateway,
} from '../helpers/responses-api.js';

describe('Responses API (/v1/responses) through the openai client', () => {
  useResponsesGateway();

  for (const stream of [false, true]) {
    test(`stream=${stream}: an upstream 400 (recorded body) reaches the client as BadRequestError with the recorded message`, async () => {
      upstream.on(() => ({ status: 400, body: ERROR_400 }));
      const err = await client.responses.create({ model: TEXT_MODEL.name, input: 'hi', stream }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof BadRequestError, `expected BadRequestError, got ${String(err)}`);
      assert.equal(err.status, 400);
      assert.equal(err.error && (err.error as { message?: string }).message, ERROR_400.error.message);
      assert.equal(err.code, ERROR_400.error.code);
      assert.equal(err.param, ERROR_400.error.param);
      assert.equal(err.type, ERROR_400.error.type);
      assert.equal(upstream.requests.length, 1, 'its only target is tried once');
      const line = await finishedLineOf(err.requestID ?? err.headers?.get('x-request-id') ?? null);
      assert.equal(line['status'], 400);
      // code model_not_found: this upstream lacks the model, not the caller's fault.
      assert.equal(line['error_class'], 'not_found');
      assert.equal(line['outcome'], 'upstream_error');
    });
  }

  test('stream: an insufficient_quota error right after the preamble (response.created) is not committed: it comes back as a 429 the SDK raises', async () => {
    upstream.on(replaySse(QUOTA_ERROR, 5));
    const recordedError = (QUOTA_ERROR.payloads.find((p) => p['type'] === 'error') as { error: { message: string; code: string; type: string } }).error;
    const caught = await client.responses.create({ model: REASONING_MODEL.name, input: 'hi', stream: true }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(caught instanceof APIError, `expected APIError, got ${String(caught)}`);
    assert.equal(caught.status, 429);
    assert.equal(caught.code, recordedError.code);
    assert.equal((caught.error as { message?: string } | undefined)?.message, recordedError.message);
    const line = gw.finished().at(-1)!;
    assert.equal(line['status'], 429);
    assert.equal(line['outcome'], 'upstream_error');
    assert.equal(line['error_class'], 'quota');
  });

  test('stream: nothing of the preamble reaches a raw client before the error, and the key never does', async () => {
    upstream.on(replaySse(QUOTA_ERROR, 5));
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEY}` },
      body: JSON.stringify({ model: REASONING_MODEL.name, input: 'hi', stream: true }),
    });
    assert.equal(res.status, 429);
    const text = await res.text();
    assert.ok(!text.includes('response.created'), 'the preamble was held back');
    assert.equal((JSON.parse(text) as { error: { code: string } }).error.code, 'insufficient_quota');
    assert.ok(!text.includes(UPSTREAM_KEY));
  });

  test('responses.stream(): the error rejects finalResponse() with an APIError, with no event before it', async () => {
    upstream.on(replaySse(QUOTA_ERROR, 5));
    const stream = client.responses.stream({ model: REASONING_MODEL.name, input: 'hi' });
    const types: string[] = [];
    stream.on('event', (e) => types.push(e.type));
    const err = await stream.finalResponse().then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof APIError, `expected APIError, got ${String(err)}`);
    assert.equal(err.code, 'insufficient_quota');
    assert.deepEqual(types, []);
  });

  test('a bad client key: 401 AuthenticationError, upstream untouched', async () => {
    upstream.on(replaySse(TEXT));
    const bad = gw.client({ apiKey: 'sk-wrong-key-0000000000000000' });
    for (const stream of [false, true]) {
      const err = await bad.responses.create({ model: TEXT_MODEL.name, input: 'hi', stream }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof AuthenticationError, `stream=${stream}: expected AuthenticationError, got ${String(err)}`);
      assert.equal(err.status, 401);
    }
    assert.equal(upstream.requests.length, 0);
  });

  test('a prompt_cache_key that is not a string is a 400 naming it, as on chat; the upstream is not called', async () => {
    upstream.requests.length = 0;
    for (const key of [[1, 2], 5, { a: 1 }]) {
      const err = await client.responses.create({ model: TEXT_MODEL.name, input: 'hi', prompt_cache_key: key as unknown as string }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof BadRequestError, `${JSON.stringify(key)}: ${String(err)}`);
      assert.match(err.message, /prompt_cache_key/);
    }
    assert.equal(upstream.requests.length, 0);
  });
});

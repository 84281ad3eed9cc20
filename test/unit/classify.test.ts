/**
 * The failure classifier: every error recording in test/fixtures (copied from
 * ../shared/fixtures; HTTP statuses from its README) read the way the pipeline reads it
 * (readUpstreamError for HTTP answers, the API's stream reader for in-stream errors) and
 * sorted to its class; then table cases for the provider wordings the recordings lack,
 * thrown network errors, and edge cases.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ApiName } from '../../src/apis/names.js';
import { afterFirstByte, classifiedAs, classifyFailure, isCallerFault, type FailureClass, type FailureFacts } from '../../src/errors/classify.js';
import type { GatewayError } from '../../src/errors/codes.js';
import { UPSTREAM_KEY } from '../helpers/gateway.js';
import { anthropicEvents, fixture, sseEvents } from '../helpers/recordings.js';
import { drive, makeTranslator } from '../helpers/translate.js';

/**
 * An HTTP error answer with `body`, read as the pipeline reads it: by the translator of the
 * recording's wire API (Anthropic bodies by messages -> messages, the rest by chat -> chat).
 */
async function readError(status: number, body: Buffer | string, name = '') {
  const wire: ApiName = name.startsWith('anthropic-') ? 'messages' : 'chat';
  return makeTranslator(wire, wire, { secrets: [UPSTREAM_KEY] }).error(status, { 'content-type': 'application/json' }, Buffer.from(body));
}

/** The first in-stream error of a recording, as the wire API's translator reports it. */
function streamError(api: ApiName, events: string[]): GatewayError {
  const failure = drive(makeTranslator(api, api, { secrets: [UPSTREAM_KEY] }), [Buffer.from(events.join(''))]).error;
  if (!failure) assert.fail('the recording carries no error event');
  return failure.error;
}

describe('classifyFailure: HTTP error recordings', () => {
  const cases: [string, number, FailureClass][] = [
    ['openai-error-429-rate-limit-exceeded.json', 429, 'rate_limited'],
    ['openai-chat-error-400-unsupported-parameter.json', 400, 'bad_request'],
    ['openai-chat-error-400-unsupported-value.json', 400, 'bad_request'],
    ['openai-chat-error-404-model-not-found.json', 404, 'not_found'],
    // A 400 whose code says the model is unknown: this upstream cannot serve it, another may.
    ['openai-responses-error-400.json', 400, 'not_found'],
    ['openrouter-error-429.json', 429, 'rate_limited'],
    ['groq-error-404-model-not-found.json', 404, 'not_found'],
    ['gemini-error-404.json', 404, 'not_found'],
    // "You exceeded your current quota" of a per-minute quota with RetryInfo: a rate limit, not billing.
    ['gemini-error-429-retry-info.json', 429, 'rate_limited'],
    ['anthropic-error-400-invalid-request.json', 400, 'bad_request'],
    ['anthropic-error-404-not-found.json', 404, 'not_found'],
  ];
  for (const [name, status, expected] of cases) {
    test(`${name} (HTTP ${status}) is ${expected}`, async () => {
      const failure = await readError(status, fixture(name), name);
      assert.deepEqual(failure.classified, classifiedAs(expected));
      assert.equal(isCallerFault(failure.classified), expected === 'bad_request');
    });
  }

  test('the numeric `code` of OpenRouter and Gemini bodies stands in for a missing status', () => {
    const body = (name: string) => (JSON.parse(fixture(name).toString('utf8')) as { error: { code: number; message: string } }).error;
    for (const name of ['openrouter-error-429.json', 'gemini-error-429-retry-info.json', 'gemini-error-404.json']) {
      const e = body(name);
      assert.equal(classifyFailure({ code: String(e.code), message: e.message }).class, e.code === 404 ? 'not_found' : 'rate_limited', name);
    }
  });
});

describe('classifyFailure: in-stream error recordings (HTTP 200)', () => {
  test('openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl: quota, the whole account', () => {
    const err = streamError('responses', anthropicEvents('openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl'));
    const c = classifyFailure({ type: err.type, code: err.openaiCode, message: err.message });
    assert.deepEqual(c, { class: 'quota', retryable: true, scope: 'account' });
  });

  test('openrouter-chat-stream-midstream-error.sse: `code: 400` "Token limit reached" is the caller\'s bad_request', () => {
    const err = streamError('chat', sseEvents('openrouter-chat-stream-midstream-error.sse'));
    assert.equal(err.openaiCode, '400');
    const c = classifyFailure({ type: err.type, code: err.openaiCode, message: err.message });
    assert.deepEqual(c, { class: 'bad_request', retryable: false, scope: 'request' });
    assert.equal(isCallerFault(c), true);
  });
});

describe('classifyFailure: provider wordings and statuses', () => {
  const cases: [FailureFacts, FailureClass, string][] = [
    [
      {
        status: 429,
        type: 'insufficient_quota',
        code: 'insufficient_quota',
        message: 'You exceeded your current quota, please check your plan and billing details.',
      },
      'quota',
      'OpenAI 429 insufficient_quota',
    ],
    [
      {
        status: 429,
        type: 'requests',
        code: 'rate_limit_exceeded',
        message: 'Rate limit reached. You can increase your rate limit by adding a payment method at https://platform.openai.com/account/billing.',
      },
      'rate_limited',
      'OpenAI rate limit that links to billing',
    ],
    [{ status: 402, type: 'billing_error', message: 'Billing error' }, 'quota', 'Anthropic 402 billing_error'],
    [{ status: 429, type: 'billing_error' }, 'quota', 'a 429 with billing_error'],
    [
      { status: 400, type: 'invalid_request_error', message: 'Your credit balance is too low to access the Anthropic API.' },
      'quota',
      'Anthropic 400 credit balance',
    ],
    [{ status: 402, message: 'Insufficient credits' }, 'quota', 'OpenRouter 402'],
    [
      {
        status: 400,
        type: 'invalid_request_error',
        message: 'You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC.',
      },
      'quota',
      'Anthropic 400 spend limit (claude-code #38035)',
    ],
    [
      {
        status: 429,
        type: 'requests',
        code: 'rate_limit_exceeded',
        message: 'Rate limit reached for gpt-4o in organization org-abc on requests per day (RPD): Limit 10000, Used 10000, Requested 1.',
      },
      'quota',
      'OpenAI daily request limit (RPD)',
    ],
    [
      { status: 429, message: "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Gemini 2.5 Pro Requests per day per user per tier'" },
      'quota',
      'Vertex daily quota',
    ],
    [
      { status: 429, type: 'tokens', code: 'rate_limit_exceeded', message: 'Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000.' },
      'rate_limited',
      'OpenAI per-minute limit stays a rate limit',
    ],
    [{ status: 401, type: 'authentication_error', message: 'invalid x-api-key' }, 'credential', 'Anthropic 401'],
    [{ status: 401 }, 'credential', '401 with an empty body'],
    [{ status: 401, type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided: sk-abc***xyz.' }, 'credential', 'OpenAI 401'],
    [{ status: 403, type: 'authentication_error', message: 'Forbidden' }, 'credential', '403 authentication_error'],
    [{ status: 403, message: 'The API key was revoked.' }, 'credential', '403 saying the key is revoked'],
    [{ status: 400, message: 'API key not valid. Please pass a valid API key.' }, 'credential', 'Gemini 400 bad key'],
    [{ status: 400, type: 'invalid_request_error', message: 'Incorrect API key provided: sk-abc***xyz.' }, 'bad_request', 'another 400 that mentions a key'],
    [{ status: 403, type: 'permission_error', message: 'Your API key does not have permission to use the specified resource.' }, 'permission', 'Anthropic 403'],
    [
      { status: 403, type: 'invalid_request_error', code: 'model_not_found', message: 'Project `proj_abc` does not have access to model `o1`' },
      'permission',
      'OpenAI 403 project access',
    ],
    [{ status: 403 }, 'permission', '403 with an empty body'],
    [{ type: 'permission_error', message: 'no' }, 'permission', 'in-stream permission_error'],
    [
      { status: 400, code: 'context_length_exceeded', message: "This model's maximum context length is 8192 tokens." },
      'context_length',
      'OpenAI context_length_exceeded',
    ],
    [
      { status: 400, type: 'invalid_request_error', message: 'prompt is too long: 215000 tokens > 200000 maximum' },
      'context_length',
      'Anthropic prompt too long',
    ],
    [
      { status: 400, code: 'content_policy_violation', message: 'Your request was rejected as a result of our safety system.' },
      'content_policy',
      'OpenAI content policy',
    ],
    [{ status: 400, code: 'content_filter', message: 'The response was filtered' }, 'content_policy', 'Azure content_filter'],
    [{ status: 403, message: 'Your chosen model requires moderation and your input was flagged' }, 'content_policy', 'OpenRouter 403 moderation'],
    [{ status: 529, type: 'overloaded_error', message: 'Overloaded' }, 'overloaded', 'Anthropic 529'],
    [{ type: 'overloaded_error', message: 'Overloaded' }, 'overloaded', 'Anthropic in-stream overloaded_error'],
    [{ status: 503, type: 'server_error', message: 'The engine is currently overloaded, please try again later.' }, 'overloaded', 'OpenAI 503 overloaded'],
    [{ status: 529 }, 'overloaded', '529 with an empty body'],
    [{ status: 503 }, 'server', '503 with an empty body'],
    [{ status: 500, type: 'api_error' }, 'server', 'Anthropic 500'],
    [{ status: 408 }, 'server', '408'],
    [{ status: 599 }, 'server', 'unknown 5xx'],
    [{ status: 429, type: 'rate_limit_error' }, 'rate_limited', 'Anthropic 429'],
    [{ status: 429 }, 'rate_limited', '429 with an empty body'],
    [{ status: 404 }, 'bad_request', '404 with an empty body: nothing says the model is missing'],
    [
      { status: 404, type: 'invalid_request_error', code: 'previous_response_not_found', message: "Previous response with id 'resp_1' not found." },
      'bad_request',
      'a caller resource not found (Responses)',
    ],
    [{ status: 404, type: 'not_found_error', message: 'File not found: file-bad' }, 'bad_request', 'a caller resource not found (Anthropic)'],
    [{ status: 404, type: 'invalid_request_error', message: 'The model `gpt-x` does not exist' }, 'not_found', 'a 404 naming the model'],
    [{ type: 'not_found_error', message: 'model: x' }, 'not_found', 'in-stream not_found_error'],
    [{ status: 413, type: 'request_too_large' }, 'bad_request', 'Anthropic 413'],
    [{ status: 422 }, 'bad_request', '422'],
    [{ status: 418 }, 'bad_request', 'unknown 4xx'],
    [{ status: 200 }, 'bad_response', 'a 2xx handed over as a failure'],
    [{ code: '502', message: 'Provider returned error' }, 'server', 'OpenRouter in-stream code 502'],
    [{ code: '429', message: 'Rate limited' }, 'rate_limited', 'OpenRouter in-stream code 429'],
    [{ type: 'server_error', code: 'upstream_stream_error' }, 'server', 'in-stream server_error without a status'],
    [{ type: 'invalid_request_error', message: 'bad field' }, 'bad_request', 'in-stream invalid_request_error'],
    [{}, 'unknown', 'no facts at all'],
    [{ message: 'something odd' }, 'unknown', 'a bare message'],
  ];
  for (const [facts, expected, what] of cases) {
    test(`${what}: ${expected}`, () => {
      assert.equal(classifyFailure(facts).class, expected);
    });
  }
});

describe('classifyFailure: thrown errors', () => {
  const coded = (code: string) => Object.assign(new Error(code), { code });
  const cases: [unknown, FailureClass, string][] = [
    [coded('UND_ERR_CONNECT_TIMEOUT'), 'timeout', 'undici connect timeout'],
    [coded('UND_ERR_HEADERS_TIMEOUT'), 'timeout', 'undici headers timeout'],
    [coded('UND_ERR_BODY_TIMEOUT'), 'timeout', 'undici body timeout'],
    [coded('ETIMEDOUT'), 'timeout', 'Node ETIMEDOUT'],
    [coded('ECONNREFUSED'), 'connect', 'refused'],
    [coded('ECONNRESET'), 'connect', 'reset'],
    [coded('ENOTFOUND'), 'connect', 'DNS'],
    [coded('EAI_AGAIN'), 'connect', 'DNS again'],
    [coded('UND_ERR_SOCKET'), 'connect', 'undici socket'],
    [new TypeError('fetch failed', { cause: coded('ECONNREFUSED') }), 'connect', 'code found through `cause`'],
    [new TypeError('fetch failed', { cause: new Error('x', { cause: coded('UND_ERR_HEADERS_TIMEOUT') }) }), 'timeout', 'two causes deep'],
    [coded('ERR_SOMETHING_ELSE'), 'unknown', 'an unknown code'],
    // No code at all: not a network error but our own (a RangeError from serialising, a bug).
    [new Error('boom'), 'gateway', 'an Error with no code'],
    [new RangeError('Maximum call stack size exceeded'), 'gateway', 'a RangeError'],
    ['a string', 'gateway', 'a thrown string'],
    [null, 'gateway', 'a thrown null'],
  ];
  for (const [thrown, expected, what] of cases) {
    test(`${what}: ${expected}`, () => {
      const c = classifyFailure({ thrown });
      assert.equal(c.class, expected);
      assert.equal(c.retryable, expected !== 'gateway');
      assert.equal(c.scope, expected === 'gateway' ? 'gateway' : 'target');
    });
  }
});

describe('classifyFailure: edge cases of the body', () => {
  test('an empty body: the status decides', async () => {
    assert.equal((await readError(429, '')).classified.class, 'rate_limited');
    assert.equal((await readError(502, '')).classified.class, 'server');
    assert.equal((await readError(401, '')).classified.class, 'credential');
  });

  test('a string `error`: its text is the message', async () => {
    const bad = await readError(403, JSON.stringify({ error: `Incorrect API key provided: ${UPSTREAM_KEY}` }));
    assert.equal(bad.classified.class, 'credential');
    assert.equal(bad.error.code, 'GW_ERR_UPSTREAM_AUTH');
    assert.ok(!(bad.reason ?? '').includes(UPSTREAM_KEY), 'the reason is scrubbed of the key');
    assert.equal((await readError(400, JSON.stringify({ error: 'your request is wrong' }))).classified.class, 'bad_request');
  });

  test('an HTML error page: the status decides', async () => {
    assert.equal((await readError(503, '<html><body>Service Unavailable</body></html>')).classified.class, 'server');
  });

  test('permission keeps the upstream body from the client but its message for the log', async () => {
    const f = await readError(403, JSON.stringify({ error: { type: 'permission_error', message: 'no access to claude-x' } }));
    assert.equal(f.classified.class, 'permission');
    assert.equal(f.error.code, 'GW_ERR_UPSTREAM_AUTH');
    assert.doesNotMatch(f.error.message, /claude-x/);
    assert.equal(f.reason, 'no access to claude-x');
  });
});

describe('classifyFailure: failures the gateway saw itself', () => {
  test('unreadable is bad_response, stall is stall, a stream cut short is stream and may still fail over', () => {
    assert.deepEqual(classifyFailure({ local: 'unreadable' }), classifiedAs('bad_response'));
    assert.deepEqual(classifyFailure({ local: 'stall' }), { class: 'stall', retryable: true, scope: 'target' });
    assert.deepEqual(classifyFailure({ local: 'cut', status: 500 }), { class: 'stream', retryable: true, scope: 'target' });
  });
});

describe('what each class means', () => {
  test('retryable and scope per class; caller faults are exactly the request-scope classes', () => {
    const meaning: Record<FailureClass, [boolean, 'request' | 'target' | 'account' | 'gateway']> = {
      rate_limited: [true, 'target'],
      overloaded: [true, 'target'],
      server: [true, 'target'],
      timeout: [true, 'target'],
      stall: [true, 'target'],
      connect: [true, 'target'],
      not_found: [true, 'target'],
      bad_response: [true, 'target'],
      unknown: [true, 'target'],
      gateway: [false, 'gateway'],
      permission: [true, 'target'],
      quota: [true, 'account'],
      credential: [true, 'account'],
      context_length: [false, 'request'],
      content_policy: [false, 'request'],
      bad_request: [false, 'request'],
      stream: [false, 'target'],
    };
    for (const [cls, [retryable, scope]] of Object.entries(meaning) as [FailureClass, [boolean, string]][]) {
      assert.deepEqual(classifiedAs(cls), { class: cls, retryable, scope }, cls);
      assert.equal(isCallerFault(classifiedAs(cls)), scope === 'request', cls);
    }
  });
});

describe('afterFirstByte: a failure once bytes reached the client', () => {
  test('is never retryable; a stall or timeout keeps its class, anything else is a broken stream', () => {
    for (const cls of ['rate_limited', 'server', 'bad_response', 'quota', 'unknown'] as const) {
      assert.deepEqual(afterFirstByte(classifiedAs(cls)), { ...classifiedAs(cls), class: 'stream', retryable: false });
    }
    assert.deepEqual(afterFirstByte(classifiedAs('stall')), { ...classifiedAs('stall'), retryable: false });
    assert.deepEqual(afterFirstByte(classifiedAs('timeout')), { ...classifiedAs('timeout'), retryable: false });
  });
});

/**
 * Every translator of the support matrix (`supportedPairs()`), fed every recorded error
 * answer of its wire API through `error()`: the client gets the status, type, code and
 * message in its own API's shape, Retry-After kept, and the failure class the router acts
 * on (by status, or by what the body says).
 */
import assert from 'node:assert/strict';
import { after, before, describe, mock, test } from 'node:test';
import type { ApiName } from '../../src/apis/names.js';
import type { FailureClass } from '../../src/errors/classify.js';
import { supportedPairs } from '../../src/translate/table.js';
import { ERROR_RECORDINGS, statusOf, type Obj } from '../helpers/recording-catalog.js';
import { NOW_MS } from '../helpers/chat-bridge-checks.js';
import { fixture } from '../helpers/recordings.js';
import { makeTranslator } from '../helpers/translate.js';

const PAIRS = supportedPairs();
const pairName = (p: { client: ApiName; wire: ApiName }): string => `${p.client} -> ${p.wire}`;

// chat -> messages stamps `created` from the clock: pinned, so every run gives the same bytes.
before(() => mock.method(Date, 'now', () => NOW_MS));
after(() => mock.restoreAll());

/** The class of an error answer by HTTP status (the recordings' statuses). */
const ERROR_CLASS_BY_STATUS: Readonly<Record<number, FailureClass>> = { 400: 'bad_request', 404: 'not_found', 429: 'rate_limited' };

/** Recordings whose body says more than their status (see test/unit/classify.test.ts). */
const ERROR_CLASS_BY_NAME: Readonly<Record<string, FailureClass>> = {
  // HTTP 400 with code model_not_found: this upstream cannot serve the model, another may.
  'openai-responses-error-400.json': 'not_found',
};

/** Anthropic error types as an OpenAI client gets them (what OpenAI answers for the same condition). */
const ANTHROPIC_AS_OPENAI: Readonly<Record<string, { status: number; type: string; code: string | null }>> = {
  invalid_request_error: { status: 400, type: 'invalid_request_error', code: null },
  not_found_error: { status: 404, type: 'invalid_request_error', code: null },
  rate_limit_error: { status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded' },
};

const HEADERS = { 'retry-after': '17', 'x-request-id': 'req_upstream', 'content-type': 'application/json' };

for (const pair of PAIRS) {
  const { client, wire } = pair;
  describe(`${pairName(pair)} on recorded error answers`, () => {
    for (const name of ERROR_RECORDINGS[wire]) {
      const status = statusOf(name);
      test(`${name}: the client gets the status, type, code and message, Retry-After kept; class ${ERROR_CLASS_BY_NAME[name] ?? ERROR_CLASS_BY_STATUS[status]}`, () => {
        const body = fixture(name);
        const err = (JSON.parse(body.toString('utf8')) as Obj)['error'] as Obj;
        const f = makeTranslator(client, wire).error(status, HEADERS, body);
        assert.equal(f.classified.class, ERROR_CLASS_BY_NAME[name] ?? ERROR_CLASS_BY_STATUS[status]);
        assert.equal(f.error.message, err['message']);
        assert.equal(f.error.headers['retry-after'], '17');
        assert.equal(f.error.headers['x-request-id'], undefined, 'only retry headers are kept');
        if (client === wire || wire !== 'messages') {
          // The same error object on both sides (OpenAI's); a Messages client gets it in Anthropic's shape by status.
          assert.equal(f.error.status, status);
          assert.equal(f.error.type, err['type'] ?? 'invalid_request_error');
          if (wire !== 'messages') assert.equal(f.error.openaiCode, err['code'] === undefined || err['code'] === null ? null : String(err['code']));
          assert.equal(f.error.param, typeof err['param'] === 'string' ? err['param'] : null);
        } else {
          const want = ANTHROPIC_AS_OPENAI[err['type'] as string]!;
          const code = err['type'] === 'not_found_error' && /\bmodel\b/.test(err['message'] as string) ? 'model_not_found' : want.code;
          assert.deepEqual([f.error.status, f.error.type, f.error.openaiCode], [want.status, want.type, code]);
        }
      });
    }
  });
}

/**
 * A data line with a top-level `error` and no event type, the shape OpenAI-compatible servers
 * (OpenRouter, vLLM, Azure-style deployments) send mid-stream whatever the route, is a
 * failure on every identity pair: the client gets the gateway's own error event with the
 * upstream's message scrubbed of the account's key (an Azure-style 32-hex key matches no
 * key-like pattern, only the exact secret), never the line as it came.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ApiName } from '../../src/apis/names.js';
import { drive, makeTranslator } from '../helpers/translate.js';

const KEY = '0123456789abcdef0123456789abcdef';
const ERROR_LINE = `data: ${JSON.stringify({ error: { message: `Internal error for key ${KEY}`, code: 500, type: 'server_error' } })}\n\n`;

/** A first well-formed event of each wire API (so the failure comes after the first byte). */
const FIRST: Record<ApiName, string> = {
  chat: `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }] })}\n\n`,
  responses: `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi' })}\n\n`,
  messages: `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } })}\n\n`,
};

describe('an untyped `error` line mid-stream on the identity pairs', () => {
  for (const api of ['chat', 'responses', 'messages'] as const) {
    test(`${api} -> ${api}: a failure, the key scrubbed, the line not relayed`, () => {
      const got = drive(makeTranslator(api, api, { secrets: [KEY] }), [Buffer.from(FIRST[api] + ERROR_LINE)]);
      assert.ok(got.error, 'the stream ends in a failure');
      assert.ok(!got.text.includes(KEY), got.text);
      assert.ok(!got.text.includes(ERROR_LINE.trim()), 'the upstream line is not relayed as it came');
      assert.match(got.text, /Internal error for key \[redacted\]/);
    });
  }
});

/**
 * The request side of the translators, through `translator.request()` as the pipeline
 * calls it. chat -> messages body conversion is covered in anthropic-request.test.ts; here
 * only what that file does not check (whitespace-only text and stop sequences, image/jpg).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { makeTranslator } from '../helpers/translate.js';

type Obj = Record<string, unknown>;

const chat = (extra: Obj = {}): Obj => ({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra });

describe('chat -> chat request', () => {
  test('a stream asks the upstream for usage and keeps the other stream_options', () => {
    for (const [given, want] of [
      [undefined, { include_usage: true }],
      [{ include_usage: false }, { include_usage: true }],
      [{ include_obfuscation: false }, { include_obfuscation: false, include_usage: true }],
      [
        { include_usage: false, include_obfuscation: true },
        { include_usage: true, include_obfuscation: true },
      ],
    ] as const) {
      // Whether the client gets the usage chunk is the translator's business on the way back.
      for (const wantsUsage of [true, false]) {
        const body = chat({ stream: true, ...(given ? { stream_options: given } : {}) });
        const before = structuredClone(body);
        const out = makeTranslator('chat', 'chat', { stream: true, wantsUsage }).request(body);
        assert.deepEqual(out.body['stream_options'], want, JSON.stringify(given));
        assert.deepEqual({ ...out.body, stream_options: undefined }, { ...before, stream_options: undefined }, 'nothing else changes');
        assert.deepEqual(body, before, 'the client body is not mutated');
      }
    }
  });

  test('a non-stream request is sent as it came', () => {
    const body = chat({ temperature: 0.2 });
    const out = makeTranslator('chat', 'chat', { stream: false, wantsUsage: false }).request(body);
    assert.deepEqual(out.body, body);
    assert.equal(out.body['stream_options'], undefined);
  });
});

describe('messages -> messages request', () => {
  const body = { model: 'claude', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

  test('forwards the client anthropic-beta header', () => {
    const beta = 'interleaved-thinking-2025-05-14,token-efficient-tools-2025-02-19';
    const out = makeTranslator('messages', 'messages', { forwardHeaders: { 'anthropic-beta': beta } }).request(body);
    assert.equal(out.headers?.['anthropic-beta'], beta);
    assert.deepEqual(out.body, body);
  });

  test('sends no anthropic-beta when the client sent none', () => {
    const out = makeTranslator('messages', 'messages').request(body);
    assert.equal(out.headers?.['anthropic-beta'], undefined);
  });
});

describe('chat -> messages request', () => {
  const convert = (body: Obj, stream = false): Obj => makeTranslator('chat', 'messages', { stream }).request(body).body;

  test('whitespace-only stop sequences are dropped (Anthropic refuses them), others kept', () => {
    assert.deepEqual(convert(chat({ stop: [' ', '\n', 'END', '\t\r\n', ' x '] }))['stop_sequences'], ['END', ' x ']);
    assert.equal(convert(chat({ stop: '  ' }))['stop_sequences'], undefined);
    assert.equal(convert(chat({ stop: ['\n\n'] }))['stop_sequences'], undefined);
  });

  test('a data:image/jpg URL is sent as image/jpeg', () => {
    for (const prefix of ['data:image/jpg;base64,', 'data:IMAGE/JPG;base64,']) {
      const out = convert(chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `${prefix}/9j/4AAQSkZJRg==` } }] }] }));
      assert.deepEqual(out['messages'], [
        { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQSkZJRg==' } }] },
      ]);
    }
  });

  test('whitespace-only text parts and contents are dropped', () => {
    const out = convert({
      model: 'm',
      messages: [
        { role: 'system', content: ' \n ' },
        {
          role: 'developer',
          content: [
            { type: 'text', text: '\t' },
            { type: 'text', text: 'Be brief.' },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: '   ' },
            { type: 'text', text: 'Weather?' },
            { type: 'text', text: '\n' },
          ],
        },
        { role: 'assistant', content: '  ', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: ' \n' },
        { role: 'user', content: '\n\n' },
        { role: 'assistant', content: [{ type: 'text', text: ' ' }] },
        { role: 'user', content: 'Thanks' },
      ],
    });
    assert.equal(out['system'], 'Be brief.');
    assert.deepEqual(out['messages'], [
      { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'weather', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1' },
          { type: 'text', text: 'Thanks' },
        ],
      },
    ]);
    assert.ok(!JSON.stringify(out).match(/"text":"\s*"/), 'no whitespace-only text block anywhere');
  });

  test('stream is set from the attempt, whatever the body says', () => {
    assert.equal(convert(chat({ stream: false }), true)['stream'], true);
    assert.equal(convert(chat({ stream: true }), false)['stream'], undefined);
  });
});

/**
 * fast-check arbitraries for client bodies of the three client APIs, for the property tests
 * in test/hostile: valid-ish bodies built from the shapes the APIs document (OpenAI's
 * `CreateChatCompletionRequest` / `CreateResponse`, Anthropic's Messages request, as
 * src/apis and the route schemas read them), and hostile values to put anywhere in them
 * (wrong types, odd unicode, huge strings, prototype-named keys, deep-ish nesting, numbers
 * JSON cannot carry written as raw text).
 */
import fc from 'fast-check';
import type { ApiName } from '../../src/apis/names.js';

type Obj = Record<string, unknown>;

/** A string value standing for raw JSON number text (`1e400`, `-0`): `rawJson` writes it unquoted. */
const RAW = '\u0000raw:';
const RAW_NUMBERS = ['-0', '1e400', '-1e400', '1e308', '5e-324', '123456789012345678901234567890', '0.0000000000000000000001'];

/** `JSON.stringify(v)`, with each RAW-tagged string written as its number text. */
export function rawJson(v: unknown): string {
  return JSON.stringify(v).replace(/"\\u0000raw:([^"]*)"/g, '$1');
}

/** Keys that name things on Object.prototype, and keys the APIs read. */
export const ODD_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', 'toJSON', 'then', 'length'];
const API_KEYS = ['type', 'role', 'content', 'text', 'name', 'id', 'input', 'arguments', 'tool_calls', 'function', 'parameters', 'usage', 'model', 'messages'];

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const big = (n: number) => fc.constantFrom('x', 'é', '😀', '\u0000').map((c) => c.repeat(n));

/** Strings: ordinary, any code point, lone surrogates, control characters, RTL and zero-width, huge, prototype names, number-ish. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 20 }) },
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: loneSurrogate, minLength: 1, maxLength: 4 }),
  fc.constantFrom('', ' ', '\u202e\u200b\ufeff', '\r\n\r\n', 'data: [DONE]\n\n', 'NaN', 'Infinity', '-0', '1e308', 'null', 'true', '{}', '[]'),
  fc.constantFrom(...ODD_KEYS),
  big(70_000),
);

/** Numbers, as JSON carries them and as raw text it cannot (`-0`, `1e400`). */
export const oddNumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -1, 1.5, 1e308, -1e308, 5e-324, 2 ** 53 + 2, 1023, 1024, 1025),
  fc.constantFrom(...RAW_NUMBERS).map((n) => RAW + n),
);

/** A key for a generated object: one the APIs read, a prototype name, or anything. */
export const oddKey: fc.Arbitrary<string> = fc.oneof(fc.constantFrom(...API_KEYS), fc.constantFrom(...ODD_KEYS), fc.string({ maxLength: 8 }));

/** Any JSON-ish value, nested up to a few levels, with odd keys, strings and numbers. */
export const junk: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    oddNumber,
    oddString,
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(oddKey, tie('v'), { maxKeys: 4 }),
  ),
})).v;

/** An array or object nested `depth` levels. */
export const nested = (depth: number, leaf: unknown = 'x'): unknown => {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { content: v };
  return v;
};

/** Deep-ish values: near and past the gateway's nesting cap (src/apis/nesting.ts, 256). */
export const deep: fc.Arbitrary<unknown> = fc.oneof(fc.integer({ min: 10, max: 60 }), fc.constantFrom(250, 255, 256, 300, 600)).map((d) => nested(d));

const text = fc.oneof({ weight: 5, arbitrary: fc.string({ maxLength: 30 }) }, oddString);
const toolName = fc.oneof(fc.constantFrom('get_weather', 'bash', 'exec_command', 'apply_patch'), fc.stringMatching(/^[a-zA-Z0-9_-]{1,64}$/));
const id = fc.stringMatching(/^[a-zA-Z0-9_]{1,30}$/);
const args = fc.oneof(
  fc.constantFrom('{}', '{"city":"Paris"}', '', '{"a":', 'null', '[1,2]'),
  junk.map((v) => JSON.stringify(v) ?? ''),
);
const schema = fc.oneof(fc.constant({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }), fc.constant({ type: 'object' }), junk);
const effort = fc.constantFrom('minimal', 'low', 'medium', 'high', 'xhigh', 'none');
const imageUrl = fc.constantFrom('https://example.com/cat.png', 'data:image/png;base64,iVBORw0KGgo=', 'data:,', '');

/** Model names: the three of the hostile gateway (one per wire API), and names it does not know. */
export const modelName: fc.Arbitrary<string> = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom('m-chat', 'm-resp', 'm-anth') },
  oddString.filter((s) => s.length > 0),
);

const chatPart = fc.oneof(
  fc.record({ type: fc.constant('text'), text }),
  fc.record({
    type: fc.constant('image_url'),
    image_url: fc.record({ url: imageUrl, detail: fc.constantFrom('auto', 'low', 'high') }, { requiredKeys: ['url'] }),
  }),
  fc.record({ type: fc.constant('input_audio'), input_audio: fc.record({ data: text, format: fc.constantFrom('wav', 'mp3') }) }),
);
const chatToolCall = fc.record({ id, type: fc.constant('function'), function: fc.record({ name: toolName, arguments: args }) });
const chatMessage = fc.oneof(
  fc.record({
    role: fc.constantFrom('system', 'developer'),
    content: fc.oneof(text, fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 3 })),
  }),
  fc.record({ role: fc.constant('user'), content: fc.oneof(text, fc.array(chatPart, { maxLength: 3 })) }),
  fc.record(
    {
      role: fc.constant('assistant'),
      content: fc.oneof(text, fc.constant(null)),
      tool_calls: fc.array(chatToolCall, { minLength: 1, maxLength: 3 }),
      reasoning_content: text,
    },
    { requiredKeys: ['role', 'content'] },
  ),
  fc.record({ role: fc.constant('tool'), tool_call_id: id, content: fc.oneof(text, fc.array(chatPart, { maxLength: 2 })) }),
);
const chatTool = fc.record({
  type: fc.constant('function'),
  function: fc.record({ name: toolName, description: text, parameters: schema, strict: fc.boolean() }, { requiredKeys: ['name'] }),
});

/** A `POST /v1/chat/completions` body of the documented shape. */
export const chatBody: fc.Arbitrary<Obj> = fc.record(
  {
    model: modelName,
    messages: fc.array(chatMessage, { minLength: 1, maxLength: 5 }),
    stream: fc.boolean(),
    stream_options: fc.record({ include_usage: fc.boolean() }),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    top_p: fc.double({ min: 0, max: 1, noNaN: true }),
    max_tokens: fc.integer({ min: 1, max: 100_000 }),
    max_completion_tokens: fc.integer({ min: 1, max: 100_000 }),
    tools: fc.array(chatTool, { maxLength: 3 }),
    tool_choice: fc.oneof(
      fc.constantFrom('auto', 'none', 'required'),
      toolName.map((name) => ({ type: 'function', function: { name } })),
    ),
    parallel_tool_calls: fc.boolean(),
    reasoning_effort: effort,
    response_format: fc.oneof(
      fc.constant({ type: 'text' }),
      fc.constant({ type: 'json_object' }),
      schema.map((s) => ({ type: 'json_schema', json_schema: { name: 'x', schema: s } })),
    ),
    stop: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, text, fc.array(text, { maxLength: 4 })),
    user: fc.string({ maxLength: 20 }),
    n: fc.oneof({ weight: 5, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 3 })),
    seed: fc.integer(),
  },
  { requiredKeys: ['model', 'messages'] },
);

const respContent = fc.oneof(
  fc.record({ type: fc.constant('input_text'), text }),
  fc.record({ type: fc.constant('output_text'), text, annotations: fc.constant([]) }),
  fc.record({ type: fc.constant('input_image'), image_url: imageUrl, detail: fc.constantFrom('auto', 'low', 'high') }),
  fc.record({ type: fc.constant('input_file'), file_data: text, filename: text }),
);
const respItem = fc.oneof(
  fc.record({ role: fc.constantFrom('system', 'developer', 'user', 'assistant'), content: fc.oneof(text, fc.array(respContent, { maxLength: 3 })) }),
  fc.record({ type: fc.constant('message'), role: fc.constantFrom('user', 'assistant'), content: fc.array(respContent, { maxLength: 3 }) }),
  fc.record({ type: fc.constant('function_call'), call_id: id, name: toolName, arguments: args }),
  fc.record({ type: fc.constant('function_call_output'), call_id: id, output: fc.oneof(text, fc.array(respContent, { maxLength: 2 })) }),
  fc.record({ type: fc.constant('custom_tool_call'), call_id: id, name: toolName, input: text }),
  fc.record({ type: fc.constant('custom_tool_call_output'), call_id: id, output: text }),
  fc.record({
    type: fc.constant('reasoning'),
    id: id.map((s) => `rs_${s}`),
    summary: fc.array(fc.record({ type: fc.constant('summary_text'), text }), { maxLength: 2 }),
    encrypted_content: text,
  }),
);
const respTool = fc.oneof(
  fc.record({ type: fc.constant('function'), name: toolName, description: text, parameters: schema, strict: fc.boolean() }, { requiredKeys: ['type', 'name'] }),
  fc.record({ type: fc.constant('custom'), name: toolName, description: text }),
  fc.record({ type: fc.constantFrom('web_search', 'local_shell', 'file_search') }),
);

/** A `POST /v1/responses` body of the documented shape. */
export const responsesBody: fc.Arbitrary<Obj> = fc.record(
  {
    model: modelName,
    input: fc.oneof(text, fc.array(respItem, { minLength: 1, maxLength: 5 })),
    instructions: text,
    stream: fc.boolean(),
    max_output_tokens: fc.integer({ min: 1, max: 100_000 }),
    reasoning: fc.record({ effort, summary: fc.constantFrom('auto', 'concise', 'detailed') }, { requiredKeys: [] }),
    tools: fc.array(respTool, { maxLength: 3 }),
    tool_choice: fc.oneof(
      fc.constantFrom('auto', 'none', 'required'),
      toolName.map((name) => ({ type: 'function', name })),
    ),
    text: fc.record({
      format: fc.oneof(
        fc.constant({ type: 'text' }),
        schema.map((s) => ({ type: 'json_schema', name: 'x', schema: s })),
      ),
    }),
    store: fc.boolean(),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    include: fc.constant(['reasoning.encrypted_content']),
    parallel_tool_calls: fc.boolean(),
  },
  { requiredKeys: ['model'] },
);

const block = fc.oneof(
  fc.record({ type: fc.constant('text'), text, cache_control: fc.constant({ type: 'ephemeral' }) }, { requiredKeys: ['type', 'text'] }),
  fc.record({
    type: fc.constant('image'),
    source: fc.record({ type: fc.constant('base64'), media_type: fc.constantFrom('image/png', 'image/gif'), data: text }),
  }),
  fc.record({ type: fc.constant('document'), source: fc.record({ type: fc.constant('text'), media_type: fc.constant('text/plain'), data: text }) }),
  fc.record({ type: fc.constant('tool_use'), id, name: toolName, input: fc.oneof(fc.constant({}), junk) }),
  fc.record(
    {
      type: fc.constant('tool_result'),
      tool_use_id: id,
      content: fc.oneof(text, fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 2 })),
      is_error: fc.boolean(),
    },
    { requiredKeys: ['type', 'tool_use_id'] },
  ),
  fc.record({ type: fc.constant('thinking'), thinking: text, signature: text }),
  fc.record({ type: fc.constant('redacted_thinking'), data: text }),
);
const anthMessage = fc.record({ role: fc.constantFrom('user', 'assistant'), content: fc.oneof(text, fc.array(block, { maxLength: 4 })) });
const anthTool = fc.oneof(
  fc.record({ name: toolName, description: text, input_schema: schema }, { requiredKeys: ['name', 'input_schema'] }),
  fc.record({ type: fc.constantFrom('bash_20250124', 'text_editor_20250728', 'web_search_20250305'), name: toolName }),
);

/** A `POST /v1/messages` body of the documented shape (`max_tokens` optional: the gateway fills it). */
export const messagesBody: fc.Arbitrary<Obj> = fc.record(
  {
    model: modelName,
    max_tokens: fc.integer({ min: 1, max: 64_000 }),
    messages: fc.array(anthMessage, { minLength: 1, maxLength: 5 }),
    system: fc.oneof(text, fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 2 })),
    stream: fc.boolean(),
    thinking: fc.oneof(
      fc.record({ type: fc.constant('enabled'), budget_tokens: fc.integer({ min: 1024, max: 32_000 }) }),
      fc.constant({ type: 'adaptive' }),
      fc.constant({ type: 'disabled' }),
    ),
    output_config: fc.record({ effort: fc.constantFrom('low', 'medium', 'high', 'max', 'xhigh') }),
    tools: fc.array(anthTool, { maxLength: 3 }),
    tool_choice: fc.oneof(
      fc.constant({ type: 'auto' }),
      fc.constant({ type: 'any' }),
      toolName.map((name) => ({ type: 'tool', name })),
      fc.constant({ type: 'none' }),
    ),
    metadata: fc.record({ user_id: fc.string({ maxLength: 20 }) }),
    temperature: fc.double({ min: 0, max: 1, noNaN: true }),
    stop_sequences: fc.array(text, { maxLength: 3 }),
  },
  { requiredKeys: ['model', 'messages'] },
);

export const VALID_BODIES: Readonly<Record<ApiName, fc.Arbitrary<Obj>>> = { chat: chatBody, responses: responsesBody, messages: messagesBody };

/**
 * A hostile variant of a valid body: a top-level field, a turn, or a field of a turn
 * replaced by junk, deep nesting or a wrong type; a field removed; the whole body not an
 * object; or prototype-named keys added.
 */
export function hostile(valid: fc.Arbitrary<Obj>): fc.Arbitrary<unknown> {
  const value = fc.oneof(junk, deep, fc.constantFrom([], {}, [{}], null, '', 0, RAW + '-0', RAW + '1e400'));
  const turnsKey = (b: Obj) => (Array.isArray(b['messages']) ? 'messages' : 'input');
  return fc.oneof(
    fc.tuple(valid, oddKey, value).map(([b, k, v]) => ({ ...b, [k]: v })),
    fc
      .tuple(valid, fc.constantFrom('model', 'messages', 'input', 'stream', 'max_tokens', 'tools', 'system', 'reasoning', 'thinking', 'stream_options'), value)
      .map(([b, k, v]) => ({ ...b, [k]: v })),
    fc.tuple(valid, fc.constantFrom('model', 'messages', 'input')).map(([b, k]) => {
      const { [k]: _gone, ...rest } = b;
      return rest;
    }),
    fc.tuple(valid, fc.nat(), fc.oneof(oddKey, fc.constantFrom('role', 'content', 'type')), value).map(([b, i, k, v]) => {
      const turns = b[turnsKey(b)];
      if (!Array.isArray(turns) || turns.length === 0) return { ...b, [turnsKey(b)]: [v] };
      const copy = [...(turns as unknown[])];
      const at = i % copy.length;
      const turn = copy[at];
      copy[at] = turn && typeof turn === 'object' && !Array.isArray(turn) ? { ...turn, [k]: v } : v;
      return { ...b, [turnsKey(b)]: copy };
    }),
    fc.tuple(valid, fc.nat(), value).map(([b, i, v]) => {
      const turns = b[turnsKey(b)];
      if (!Array.isArray(turns) || turns.length === 0) return b;
      const copy = [...(turns as unknown[])];
      copy[i % copy.length] = v;
      return { ...b, [turnsKey(b)]: copy };
    }),
    fc.oneof(junk, fc.constantFrom([], 'null', 0)),
  );
}

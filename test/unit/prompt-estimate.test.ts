/**
 * The prompt estimate (usage/prompt-parts.ts, usage/estimate.ts) counts what a model reads
 * besides message text, in each client API's shape (issue 29: a 4,000-token tool result
 * counted 0, so Claude Code compacted too late and a `tpm` key reserved too little): tool
 * results and inputs, function-call arguments and outputs, tool definitions, images and
 * documents. It never recurses (a 5,000-deep body is walked, not overflowed) and lets the
 * event loop run on a body of millions of values.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { chatApi } from '../../src/apis/chat.js';
import { messagesApi } from '../../src/apis/messages.js';
import { responsesApi } from '../../src/apis/responses.js';
import { countPromptTokens } from '../../src/usage/estimate.js';
import { BYTES_PER_PAGE, IMAGE_TOKENS, LOW_DETAIL_IMAGE_TOKENS, PAGE_TOKENS } from '../../src/usage/prompt-parts.js';
import { seededRandom } from '../helpers/random.js';

const WORDS = [
  'the',
  'gateway',
  'routes',
  'each',
  'call',
  'to',
  'an',
  'upstream',
  'account',
  'and',
  'records',
  'its',
  'cost',
  'file',
  'line',
  '42',
  'error:',
  'at',
  'src/app.ts',
];

/** Log-like text of about `tokens` o200k tokens. */
function textOf(tokens: number, seed = 1): string {
  const rnd = seededRandom(seed);
  const out: string[] = [];
  while (countTokens(out.join(' ')) < tokens) for (let i = 0; i < 50; i++) out.push(WORDS[Math.floor(rnd() * WORDS.length)]!);
  return out.join(' ');
}

const BIG = textOf(4000);
const BIG_TOKENS = countTokens(BIG);

/** Asserts `n` is within [lo, hi] times `expected`. */
function near(n: number, expected: number, lo = 0.95, hi = 1.15): void {
  assert.ok(n >= expected * lo && n <= expected * hi, `estimate ${n}, expected about ${expected}`);
}

describe('countPromptTokens: what a model reads besides message text', () => {
  test('a ~4,000-token tool_result (Messages), as a string and as text blocks', async () => {
    const asString = { model: 'm', messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: BIG }] }] };
    near(await countPromptTokens(messagesApi.prompt(asString)), BIG_TOKENS);
    const asBlocks = {
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: BIG }] }] }],
    };
    near(await countPromptTokens(messagesApi.prompt(asBlocks)), BIG_TOKENS);
  });

  test('a big tool_use.input (Messages), its keys and values', async () => {
    const input = { path: 'src/app.ts', content: BIG, line: 12, dry_run: false };
    const body = { model: 'm', messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'write_file', input }] }] };
    near(await countPromptTokens(messagesApi.prompt(body)), countTokens(JSON.stringify(input)));
  });

  test('function_call.arguments and function_call_output.output (Responses), string and parts', async () => {
    const args = JSON.stringify({ command: BIG });
    const call = { model: 'm', input: [{ type: 'function_call', call_id: 'c1', name: 'shell', arguments: args }] };
    near(await countPromptTokens(responsesApi.prompt(call)), countTokens(args));
    const out = { model: 'm', input: [{ type: 'function_call_output', call_id: 'c1', output: BIG }] };
    near(await countPromptTokens(responsesApi.prompt(out)), BIG_TOKENS);
    const parts = { model: 'm', input: [{ type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_text', text: BIG }] }] };
    near(await countPromptTokens(responsesApi.prompt(parts)), BIG_TOKENS);
  });

  test('chat tool calls and tool messages', async () => {
    const body = {
      model: 'm',
      messages: [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'shell', arguments: JSON.stringify({ command: 'ls' }) } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: BIG },
      ],
    };
    near(await countPromptTokens(chatApi.prompt(body)), BIG_TOKENS);
  });

  test('tool definitions and the system prompt count, in all three APIs', async () => {
    const schema = { type: 'object', properties: { command: { type: 'string', description: BIG } }, required: ['command'] };
    const expected = countTokens(JSON.stringify(schema));
    const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    const without = await countPromptTokens(chatApi.prompt(base));
    near(
      (await countPromptTokens(
        chatApi.prompt({ ...base, tools: [{ type: 'function', function: { name: 'shell', description: 'Runs', parameters: schema } }] }),
      )) - without,
      expected,
    );
    near((await countPromptTokens(messagesApi.prompt({ ...base, tools: [{ name: 'shell', description: 'Runs', input_schema: schema }] }))) - without, expected);
    near(
      (await countPromptTokens(responsesApi.prompt({ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'shell', parameters: schema }] }))) - without,
      expected,
    );
    near((await countPromptTokens(messagesApi.prompt({ ...base, system: [{ type: 'text', text: BIG }] }))) - without, BIG_TOKENS);
    near((await countPromptTokens(responsesApi.prompt({ model: 'm', input: 'hi', instructions: BIG }))) - without, BIG_TOKENS);
  });

  test('an image counts its fixed estimate in each API (85 at detail low), not its base64 text', async () => {
    const png = Buffer.alloc(300_000, 7).toString('base64');
    const text = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }] }] };
    const base = await countPromptTokens(messagesApi.prompt(text));
    const anthropic = {
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
            { type: 'text', text: 'what is this?' },
          ],
        },
      ],
    };
    assert.equal(await countPromptTokens(messagesApi.prompt(anthropic)), base + IMAGE_TOKENS);
    const chat = {
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
            { type: 'text', text: 'what is this?' },
          ],
        },
      ],
    };
    assert.equal(await countPromptTokens(chatApi.prompt(chat)), base + IMAGE_TOKENS);
    const low = {
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' },
            { type: 'input_text', text: 'what is this?' },
          ],
        },
      ],
    };
    assert.equal(await countPromptTokens(responsesApi.prompt(low)), base + LOW_DETAIL_IMAGE_TOKENS);
  });

  test('a PDF document counts pages from its size; a text document counts its text', async () => {
    const pdf = Buffer.alloc(BYTES_PER_PAGE * 4, 1).toString('base64');
    const text = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'summarise' }] }] };
    const base = await countPromptTokens(messagesApi.prompt(text));
    const doc = {
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
            { type: 'text', text: 'summarise' },
          ],
        },
      ],
    };
    assert.equal(await countPromptTokens(messagesApi.prompt(doc)), base + 4 * PAGE_TOKENS);
    const file = {
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_file', filename: 'a.pdf', file_data: `data:application/pdf;base64,${pdf}` },
            { type: 'input_text', text: 'summarise' },
          ],
        },
      ],
    };
    assert.equal(await countPromptTokens(responsesApi.prompt(file)), base + 4 * PAGE_TOKENS);
    const plain = { model: 'm', messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: BIG } }] }] };
    near(await countPromptTokens(messagesApi.prompt(plain)), BIG_TOKENS);
  });
});

describe('countPromptTokens on deep and huge prompts', () => {
  test('content nested 5,000 deep is counted (to the depth cap), not a stack overflow', async () => {
    let deep: unknown = { type: 'text', text: 'leaf' };
    for (let i = 0; i < 5000; i++) deep = { type: 'tool_result', tool_use_id: 't', content: [deep] };
    const n = await countPromptTokens(messagesApi.prompt({ model: 'm', messages: [{ role: 'user', content: [deep, { type: 'text', text: BIG }] }] }));
    near(n, BIG_TOKENS);
    let arrays: unknown = 'x';
    for (let i = 0; i < 100_000; i++) arrays = [arrays];
    assert.ok(Number.isFinite(await countPromptTokens({ messages: [{ role: 'user', content: arrays }], tools: arrays })));
  });

  test('odd values are counted or skipped, never thrown on', async () => {
    const odd = [null, 7, 'plain', [{}], { role: 5, content: { text: 3 } }, { type: 'image' }, { type: 'document', source: null }];
    const n = await countPromptTokens({ messages: odd, tools: 'not a list' });
    assert.ok(n > 0 && Number.isFinite(n));
  });

  test('a tool input of 300,000 values lets the event loop run while it is walked', async () => {
    const input = { rows: Array.from({ length: 300_000 }, (_, i) => i % 10) };
    let turns = 0;
    const tick = setInterval(() => turns++, 1);
    try {
      const n = await countPromptTokens(
        messagesApi.prompt({ model: 'm', messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'load', input }] }] }),
      );
      assert.ok(n >= 300_000, `${n}`);
    } finally {
      clearInterval(tick);
    }
    assert.ok(turns > 0, 'timers ran during the walk');
  });
});

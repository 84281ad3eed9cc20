/**
 * toChatCompletion: recorded Anthropic messages -> OpenAI chat.completion objects, checked
 * against values read from each fixture.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { toChatCompletion, toFinishReason } from '../../src/translate/chat-messages/response.js';
import { fixtureJson } from '../helpers/recordings.js';

type Obj = Record<string, unknown>;

const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
  pause_turn: 'stop',
};

function blocks(msg: Obj, type: string): Obj[] {
  return (msg['content'] as Obj[]).filter((b) => b['type'] === type);
}

describe('toChatCompletion on recorded messages', () => {
  for (const name of ['anthropic-messages-text.json', 'anthropic-messages-parallel-tool-use.json', 'anthropic-messages-thinking-tool-use.json']) {
    test(name, () => {
      const msg = fixtureJson(name);
      const out = toChatCompletion(msg, 1_760_000_000);
      assert.equal(out['id'], msg['id']);
      assert.equal(out['object'], 'chat.completion');
      assert.equal(out['created'], 1_760_000_000);
      assert.equal(out['model'], msg['model']);
      const choices = out['choices'] as Obj[];
      assert.equal(choices.length, 1);
      const choice = choices[0]!;
      assert.equal(choice['index'], 0);
      assert.equal(choice['finish_reason'], FINISH[msg['stop_reason'] as string]);
      const message = choice['message'] as Obj;
      assert.equal(message['role'], 'assistant');

      const texts = blocks(msg, 'text').map((b) => b['text'] as string);
      assert.equal(message['content'], texts.length > 0 ? texts.join('') : null);
      const thinking = blocks(msg, 'thinking').map((b) => b['thinking'] as string);
      assert.equal(message['reasoning_content'], thinking.length > 0 ? thinking.join('') : undefined);
      assert.ok(!JSON.stringify(out).includes('signature'));

      const uses = blocks(msg, 'tool_use');
      const calls = (message['tool_calls'] as Obj[] | undefined) ?? [];
      assert.equal(calls.length, uses.length);
      if (uses.length === 0) assert.equal(message['tool_calls'], undefined);
      calls.forEach((c, i) => {
        const fn = c['function'] as Obj;
        assert.equal(c['id'], uses[i]!['id']);
        assert.equal(c['type'], 'function');
        assert.equal(fn['name'], uses[i]!['name']);
        assert.equal(typeof fn['arguments'], 'string');
        assert.deepEqual(JSON.parse(fn['arguments'] as string), uses[i]!['input']);
      });

      const u = msg['usage'] as Obj;
      const prompt = (u['input_tokens'] as number) + (u['cache_read_input_tokens'] as number) + (u['cache_creation_input_tokens'] as number);
      assert.deepEqual(out['usage'], {
        prompt_tokens: prompt,
        completion_tokens: u['output_tokens'],
        total_tokens: prompt + (u['output_tokens'] as number),
        prompt_tokens_details: { cached_tokens: u['cache_read_input_tokens'] },
        cache_read_input_tokens: u['cache_read_input_tokens'],
        cache_creation_input_tokens: u['cache_creation_input_tokens'],
      });
    });
  }

  test('the parallel tool-use message keeps all four calls in order', () => {
    const out = toChatCompletion(fixtureJson('anthropic-messages-parallel-tool-use.json'));
    const calls = ((out['choices'] as Obj[])[0]!['message'] as Obj)['tool_calls'] as { function: { arguments: string } }[];
    assert.deepEqual(
      calls.map((c) => (JSON.parse(c.function.arguments) as { name: string }).name),
      ['Alice', 'Bob', 'Charlie', 'Daisy'],
    );
  });
});

describe('mapping details', () => {
  test('cached tokens count in prompt_tokens', () => {
    const out = toChatCompletion({
      id: 'msg_x',
      model: 'claude',
      content: [{ type: 'text', text: 'ok' }],
      stop_reason: 'max_tokens',
      usage: { input_tokens: 10, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200, output_tokens: 5 },
    });
    assert.deepEqual(out['usage'], {
      prompt_tokens: 1210,
      completion_tokens: 5,
      total_tokens: 1215,
      prompt_tokens_details: { cached_tokens: 1000 },
      cache_read_input_tokens: 1000,
      cache_creation_input_tokens: 200,
    });
    assert.equal((out['choices'] as Obj[])[0]!['finish_reason'], 'length');
  });

  test('server tool blocks and redacted thinking are skipped', () => {
    const out = toChatCompletion({
      id: 'msg_y',
      model: 'claude',
      content: [
        { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'x' } },
        { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] },
        { type: 'redacted_thinking', data: 'abc' },
        { type: 'text', text: 'Found it.' },
      ],
      stop_reason: 'end_turn',
      usage: { input_tokens: 1, output_tokens: 2 },
    });
    const message = (out['choices'] as Obj[])[0]!['message'] as Obj;
    assert.equal(message['content'], 'Found it.');
    assert.equal(message['tool_calls'], undefined);
    assert.equal(message['reasoning_content'], undefined);
  });

  test('stop reasons', () => {
    for (const [reason, finish] of Object.entries(FINISH)) assert.equal(toFinishReason(reason), finish, reason);
    assert.equal(toFinishReason('model_context_window_exceeded'), 'length');
    assert.equal(toFinishReason(null), 'stop');
  });
});

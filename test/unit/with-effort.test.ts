/**
 * Each client API sets a lowered reasoning effort in its own field (the shed ladder's
 * lower-effort rung), never modifying the client's body, and reads it back as that level.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { chatApi } from '../../src/apis/chat.js';
import { messagesApi } from '../../src/apis/messages.js';
import { responsesApi } from '../../src/apis/responses.js';

describe('withEffort', () => {
  test('chat: reasoning_effort', () => {
    const body = { model: 'm', reasoning_effort: 'high', messages: [] };
    const out = chatApi.withEffort(body, 'low');
    assert.equal(out['reasoning_effort'], 'low');
    assert.equal(chatApi.effort(out), 'low');
    assert.equal(body.reasoning_effort, 'high', 'the client body is untouched');
  });

  test('responses: reasoning.effort, other reasoning fields kept', () => {
    const body = { model: 'm', input: 'x', reasoning: { effort: 'high', summary: 'auto' } };
    const out = responsesApi.withEffort(body, 'medium');
    assert.deepEqual(out['reasoning'], { effort: 'medium', summary: 'auto' });
    assert.equal(responsesApi.effort(out), 'medium');
    assert.deepEqual(body.reasoning, { effort: 'high', summary: 'auto' });
    assert.deepEqual(responsesApi.withEffort({ model: 'm', input: 'x' }, 'low')['reasoning'], { effort: 'low' });
  });

  test('messages: output_config.effort when set, else a thinking budget no larger than the level', () => {
    const explicit = { model: 'm', max_tokens: 100, output_config: { effort: 'high' }, messages: [] };
    assert.deepEqual(messagesApi.withEffort(explicit, 'low')['output_config'], { effort: 'low' });
    const thinking = { model: 'm', max_tokens: 40_000, thinking: { type: 'enabled', budget_tokens: 32_000 }, messages: [] };
    const out = messagesApi.withEffort(thinking, 'medium');
    assert.deepEqual(out['thinking'], { type: 'enabled', budget_tokens: 8_192 }, "medium's budget in the effort table");
    assert.equal(messagesApi.effort(out), 'medium');
    const small = { ...thinking, thinking: { type: 'enabled', budget_tokens: 2_000 } };
    assert.deepEqual(messagesApi.withEffort(small, 'medium')['thinking'], { type: 'enabled', budget_tokens: 2_000 }, 'never raised');
    const none = { model: 'm', max_tokens: 100, messages: [] };
    assert.equal(messagesApi.withEffort(none, 'low'), none, 'nothing to lower');
  });
});

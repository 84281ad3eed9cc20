/**
 * The shape of Codex CLI 0.171.0's first request on the Responses API (captured from the
 * real binary with its default model; descriptions and most tools cut): no top-level
 * `tools`, an `additional_tools` input item holding namespaces (`functions` with the
 * code-mode `exec` custom tool and `wait`, `clock` with `sleep`), developer items for its
 * instructions, `parallel_tool_calls: false`, `store: false`, `include` of the encrypted
 * reasoning.
 */
type Obj = Record<string, unknown>;

const params = (prop: string): Obj => ({ type: 'object', properties: { [prop]: { type: 'string' } }, required: [prop], additionalProperties: false });

/** Codex's `additional_tools` item. */
export const CODEX_ADDITIONAL_TOOLS: Obj = {
  type: 'additional_tools',
  id: 'at_01a241ef-2f87-7b93-88e3-cb7a33b5c422',
  role: 'developer',
  tools: [
    {
      type: 'namespace',
      name: 'functions',
      description: '',
      tools: [
        { type: 'custom', name: 'exec', description: 'Run JavaScript code', format: { type: 'grammar', syntax: 'lark', definition: 'start: /[\\s\\S]+/' } },
        { type: 'function', name: 'wait', description: 'Waits on a yielded exec cell', strict: false, parameters: params('cell_id') },
      ],
    },
    {
      type: 'namespace',
      name: 'clock',
      description: 'Tools for reading and waiting on time.',
      tools: [{ type: 'function', name: 'sleep', description: 'Pause', strict: false, parameters: params('duration_ms') }],
    },
  ],
};

/** A Codex-shaped request body for `model`, the conversation followed by `more` items. */
export function codexBody(more: Obj[] = [], model = 'm'): Obj {
  return {
    model,
    stream: true,
    tool_choice: 'auto',
    parallel_tool_calls: false,
    reasoning: { effort: 'low', context: 'all_turns' },
    store: false,
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: '01a241ef-2ee6-7273-9565-c506e62cbd3b',
    text: { verbosity: 'low' },
    input: [
      CODEX_ADDITIONAL_TOOLS,
      { type: 'message', id: 'msg_01a241ef-2f87-7b93-88e3-cb81fce7d314', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
      { type: 'message', id: 'msg_01a241ef-2f9a-7fd1-8b55-750f0328ea18', role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
      ...more,
    ],
  };
}

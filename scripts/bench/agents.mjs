// Agent chains for the burst benchmark: each agent runs chains of streamed, tool-calling,
// reasoning_effort=high calls through the official `openai` client (default retries), one
// step after another, the tool results fed back as a coding agent does.
import { performance } from 'node:perf_hooks';
import OpenAI from 'openai';

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a file of the repository.',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  },
];
const ASKS = [
  'Plan the refactor of the request path; start by reading',
  'Check the callers of the function you found in',
  'Decide where the new module goes, given',
  'Re-check your assumption about the imports of',
  'Write the migration plan, confirming the contents of',
];
const FILES = ['src/main.ts', 'src/router/run.ts', 'src/pipeline/handle.ts', 'src/store/capacity.ts', 'src/config/load.ts'];

function messagesFor(agent, chain, step, history, steps) {
  const ask = (s) => `${ASKS[s % ASKS.length]} ${FILES[(agent + chain + s) % FILES.length]} (agent ${agent + 1}, chain ${chain + 1}, step ${s + 1}/${steps}).`;
  const msgs = [{ role: 'system', content: 'You are a careful coding agent. Read files before every decision.' }];
  for (let s = 0; s < step; s++) msgs.push({ role: 'user', content: ask(s) }, ...history[s]);
  msgs.push({ role: 'user', content: ask(step) });
  return msgs;
}

/** One streamed, tool-calling deep call; its time covers the client's own retries. */
async function runStep(client, model, messages) {
  const t0 = performance.now();
  const r = { ok: false, ms: 0, upstreamModel: null, shed: null, calls: [], error: null };
  let content = '';
  try {
    const { data: stream, response } = await client.chat.completions
      .create({ model, reasoning_effort: 'high', stream: true, stream_options: { include_usage: true }, tools: TOOLS, messages })
      .withResponse();
    r.shed = response.headers.get('x-switchyard-shed');
    r.upstreamModel = response.headers.get('x-switchyard-model') ?? model;
    r.upstream = response.headers.get('x-switchyard-upstream');
    r.attempts = Number(response.headers.get('x-switchyard-attempts') ?? 1);
    const calls = new Map();
    for await (const chunk of stream) {
      for (const ch of chunk.choices ?? []) {
        content += ch.delta?.content ?? '';
        for (const tc of ch.delta?.tool_calls ?? []) {
          const c = calls.get(tc.index) ?? { id: '', name: '', arguments: '' };
          c.id ||= tc.id ?? '';
          c.name += tc.function?.name ?? '';
          c.arguments += tc.function?.arguments ?? '';
          calls.set(tc.index, c);
        }
      }
    }
    r.calls = [...calls.values()];
    r.ok = r.calls.length > 0 || content.length > 0;
    if (!r.ok) r.error = 'empty stream';
  } catch (err) {
    r.error = err?.status ? `HTTP ${err.status}${err.code ? ` ${err.code}` : ''}` : (err?.constructor?.name ?? 'error');
  }
  r.ms = performance.now() - t0;
  return r;
}

/**
 * A client whose fetch counts every HTTP answer the SDK gets (its internal retries too), by
 * status and, for errors, by the error code in the body.
 */
function makeClient(baseURL, apiKey, counters) {
  return new OpenAI({
    baseURL,
    apiKey,
    maxRetries: 2,
    timeout: 120_000,
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      counters.statuses[res.status] = (counters.statuses[res.status] ?? 0) + 1;
      if (res.status >= 400) {
        const code = await res
          .clone()
          .json()
          .then(
            (b) => b?.error?.code ?? b?.error?.type ?? 'unknown',
            () => 'unreadable',
          );
        const k = `${res.status} ${code}`;
        counters.errors[k] = (counters.errors[k] ?? 0) + 1;
      }
      return res;
    },
  });
}

/**
 * Runs `agents` concurrent agents over `chains` chains of `steps` steps (a chain stops at its
 * first failed step); chain i goes to baseURLs[i % n]. `onStep(result, live)` after each step.
 * @returns { results, chainOk, wallMs, counters }
 */
export async function runAgents({ baseURLs, apiKey, model, chains, steps, agents, onStep }) {
  const counters = { statuses: {}, errors: {} };
  const clients = baseURLs.map((u) => makeClient(u, apiKey, counters));
  const results = [];
  const chainOk = [];
  const t0 = performance.now();
  let next = 0;
  async function agent(a) {
    while (next < chains) {
      const chain = next++;
      const client = clients[chain % clients.length];
      const history = [];
      let ok = true;
      for (let step = 0; step < steps; step++) {
        const r = await runStep(client, model, messagesFor(a, chain, step, history, steps));
        r.at = performance.now() - t0;
        results.push(r);
        onStep?.(r, counters, steps - step - 1);
        if (!r.ok) {
          ok = false;
          break;
        }
        const calls = r.calls.length ? r.calls : [{ id: '', name: 'read_file', arguments: '{}' }];
        const ids = calls.map((c, i) => c.id || `call_${chain}_${step}_${i}`);
        history.push([
          {
            role: 'assistant',
            content: null,
            tool_calls: calls.map((c, i) => ({ id: ids[i], type: 'function', function: { name: c.name || 'read_file', arguments: c.arguments || '{}' } })),
          },
          ...calls.map((c, i) => ({ role: 'tool', tool_call_id: ids[i], content: `// contents of step ${step + 1}\nexport const x = ${chain + step};` })),
        ]);
      }
      chainOk.push(ok);
    }
  }
  await Promise.all(Array.from({ length: agents }, (_v, a) => agent(a)));
  return { results, chainOk, wallMs: performance.now() - t0, counters };
}

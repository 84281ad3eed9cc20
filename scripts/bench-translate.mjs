#!/usr/bin/env node
// npm run bench:translate — CPU cost of one chat stream through the chat -> chat translator
// (the SSE framer excluded), next to what checking and parsing its frames costs alone.
// The stream is the shared bench mock's shape: a role chunk, 20 content chunks with
// `"usage":null`, a finish chunk, the usage chunk, `[DONE]`. Microseconds per stream, best
// of 5 runs of 100,000 streams, in one process.
import { SseFramer } from '../dist/sse/parse.js';
import { translator } from '../dist/translate/table.js';
import { isJsonObjectText } from '../dist/translate/json-check.js';

const chunk = (choices, extra = ',"usage":null') =>
  `data: {"id":"chatcmpl-mock","object":"chat.completion.chunk","created":1700000000,"model":"gpt-mock","system_fingerprint":"fp_x","choices":${choices}${extra}}\n\n`;
const body = [
  chunk('[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]'),
  ...Array.from({ length: 20 }, (_, i) => chunk(`[{"index":0,"delta":{"content":"token ${i} "},"logprobs":null,"finish_reason":null}]`)),
  chunk('[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]'),
  chunk('[]', ',"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}'),
  'data: [DONE]\n\n',
].join('');
const events = new SseFramer().push(Buffer.from(body));
const frames = events.map((e) => e.data).filter((d) => d !== '[DONE]');

const N = 100_000;
function best(fn) {
  let min = Infinity;
  for (let r = 0; r < 5; r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < N; i++) fn();
    min = Math.min(min, Number(process.hrtime.bigint() - t) / N / 1000);
  }
  return min.toFixed(2);
}
const ctx = { stream: true, wantsUsage: false, secrets: [], retryAfterCapMs: 10_000, options: {} };
console.log(`events per stream: ${events.length}`);
console.log(
  `chat -> chat translator, whole stream: ${best(() => {
    const tr = translator('chat', 'chat', ctx);
    for (const ev of events) tr.event(ev);
    tr.end();
  })} us`,
);
console.log(
  `isJsonObjectText on every frame:      ${best(() => {
    for (const f of frames) isJsonObjectText(f);
  })} us`,
);
console.log(
  `JSON.parse of every frame:            ${best(() => {
    for (const f of frames) JSON.parse(f);
  })} us`,
);

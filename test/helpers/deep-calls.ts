/**
 * Deep-call pieces for the burst-control tests: a chat-completions SSE chunk a fake account
 * streams, and one deep (`reasoning_effort: high`) streamed chat call through the OpenAI SDK.
 */
import type OpenAI from 'openai';

/** One chat-completions SSE chunk with `delta` (the fields the SDK reads). */
export function chatChunk(delta: Record<string, unknown>, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-deep', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

/**
 * A deep streamed chat call to `model` with the user message `prompt`.
 * @returns the text streamed.
 * @throws the SDK's APIError when the gateway answers with an error.
 */
export async function deepChat(openai: OpenAI, model: string, prompt: string): Promise<string> {
  const stream = await openai.chat.completions.create({ model, stream: true, reasoning_effort: 'high', messages: [{ role: 'user', content: prompt }] });
  let text = '';
  for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
  return text;
}

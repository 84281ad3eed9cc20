/**
 * What a token estimate counts in a prompt, in any client API's shape (chat, Responses,
 * Messages): the texts the tokenizer reads, and a fixed number of tokens for the parts it
 * cannot read (images, files, numbers). Found by one walk with its own stack (no recursion:
 * a prompt nested 5,000 deep is walked, not overflowed), capped in depth and in values, and
 * yielding to the event loop as it goes (util/json-walk.ts).
 *
 * Counted: message text (strings, text parts, `system` / `instructions`), tool calls
 * (`tool_use.input`, `function_call.arguments`, chat `tool_calls`), tool results
 * (`tool_result` content, `function_call_output.output`, text and nested blocks), reasoning
 * summaries, tool definitions (every key and value), images and files. Not counted: ids,
 * signatures, `encrypted_content` (opaque to the gateway), audio.
 */
import { nextTurn, NODES_PER_TURN } from '../util/json-walk.js';

/** A request's prompt as the estimator reads it (each client API's descriptor makes one: apis/types.ts). */
export interface Prompt {
  /** The turns, system first, as the client API shapes them (`{role, content}`, Responses items …). */
  readonly messages: readonly unknown[];
  /** The tool definitions as sent (any API's shape); absent: none. */
  readonly tools?: unknown;
}

/** A prompt with nothing in it. */
export const EMPTY_PROMPT: Prompt = { messages: [] };

/** What the walk found. */
export interface PromptParts {
  /** The texts to tokenize. */
  readonly texts: string[];
  /** Tokens counted without the tokenizer (images, files, numbers in tool data). */
  readonly fixedTokens: number;
  /** Turns, for the chat framing. */
  readonly turns: number;
}

/**
 * Tokens of one image of unknown size. Anthropic's vision docs ("Evaluate image size"): an
 * image costs about width * height / 750 tokens, and one whose long edge passes 1,568 px or
 * that would cost more than about 1,600 tokens is scaled down first, so ~1,600 is what one
 * image costs at most on most Claude models. OpenAI's vision guide prices a 1024 x 1024
 * high-detail image at 765 tokens. The gateway does not decode images, so every image is
 * taken at this ceiling.
 */
export const IMAGE_TOKENS = 1_600;
/** One image at `detail: "low"` (OpenAI's vision guide: 85 tokens whatever its size). */
export const LOW_DETAIL_IMAGE_TOKENS = 85;
/**
 * Tokens of one PDF page. Anthropic's PDF support docs ("Estimate your costs"): a page is
 * its extracted text, 1,500 to 3,000 tokens by its density, plus the page as an image; the
 * upper end of the text range is taken for the whole page.
 */
export const PAGE_TOKENS = 3_000;
/** Bytes of PDF per page assumed when estimating pages from a file's size (ours: a text page runs tens of KB). */
export const BYTES_PER_PAGE = 50_000;
/** Most pages one file counts for (Anthropic's PDF support docs: 100 pages per request). */
export const MAX_PAGES = 100;

/** Deepest level walked; deeper parts are not counted (model-call bodies are capped lower: apis/nesting.ts). */
const MAX_DEPTH = 256;
/** Most values walked; the rest of a larger prompt is not counted. */
const MAX_NODES = 2_000_000;

/** Fields whose values are bookkeeping, not prompt text, in the APIs' block shapes. */
const SKIP_KEYS = new Set([
  'type',
  'id',
  'call_id',
  'tool_use_id',
  'tool_call_id',
  'signature',
  'encrypted_content',
  'cache_control',
  'status',
  'media_type',
  'detail',
  'data',
  'file_data',
  'file_id',
  'file_url',
  'url',
  'image_url',
  'index',
  'annotations',
  'logprobs',
  'citations',
]);
/** Fields whose object value is data the model reads as JSON (tool inputs, schemas): every key and value counts. */
const DATA_KEYS = new Set(['input', 'arguments', 'parameters', 'input_schema', 'schema', 'output']);

/** Tokens of a file sent inline (base64 or a `data:` URL), from its size; one page when sent by reference. */
export function fileTokens(data: unknown): number {
  if (typeof data !== 'string') return PAGE_TOKENS;
  const comma = data.startsWith('data:') ? data.indexOf(',') + 1 : 0;
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  const bytes = Math.floor(((data.length - comma) * 3) / 4) - padding;
  return Math.min(MAX_PAGES, Math.max(1, Math.ceil(bytes / BYTES_PER_PAGE))) * PAGE_TOKENS;
}

const obj = (v: unknown): Record<string, unknown> | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);

/**
 * The tokens of a block the tokenizer cannot read (an image, a file, a PDF document), or
 * null for any other block (walked as usual). A text document's text goes to `texts`.
 */
function mediaTokens(o: Record<string, unknown>, texts: string[]): number | null {
  switch (o['type']) {
    case 'image':
    case 'image_url':
    case 'input_image': {
      const detail = o['detail'] ?? obj(o['image_url'])?.['detail'];
      return detail === 'low' ? LOW_DETAIL_IMAGE_TOKENS : IMAGE_TOKENS;
    }
    case 'input_file':
      return fileTokens(o['file_data']);
    case 'file':
      return fileTokens(obj(o['file'])?.['file_data']);
    case 'document': {
      const source = obj(o['source']);
      for (const k of ['title', 'context']) if (typeof o[k] === 'string') texts.push(o[k]);
      if (source?.['type'] === 'text' && typeof source['data'] === 'string') {
        texts.push(source['data']);
        return 0;
      }
      // A `content` source holds blocks: walked as usual.
      return source?.['type'] === 'content' ? null : fileTokens(source?.['type'] === 'base64' ? source['data'] : undefined);
    }
    default:
      return null;
  }
}

/**
 * Walks `prompt` for what an estimate counts (see the module comment). Never throws on odd
 * input: values that are no API's shape are counted as their strings or skipped.
 */
export async function promptParts(prompt: Prompt): Promise<PromptParts> {
  const texts: string[] = [];
  let fixed = 0;
  // The walk's stack: a value, its depth, and whether it is tool data (keys and all values count).
  const values: unknown[] = [];
  const depths: number[] = [];
  const data: boolean[] = [];
  const push = (v: unknown, depth: number, isData: boolean): void => {
    values.push(v);
    depths.push(depth);
    data.push(isData);
  };
  if (prompt.tools !== undefined && prompt.tools !== null) push(prompt.tools, 1, true);
  for (let i = prompt.messages.length - 1; i >= 0; i--) push(prompt.messages[i], 1, false);
  let nodes = 0;
  while (values.length > 0 && nodes < MAX_NODES) {
    if (++nodes % NODES_PER_TURN === 0) await nextTurn();
    const v = values.pop();
    const depth = depths.pop()!;
    const isData = data.pop()!;
    if (typeof v === 'string') {
      if (v) texts.push(v);
    } else if (typeof v === 'number') {
      // Pushed in tool data only: o200k_base takes digits three at a time.
      fixed += Math.ceil(String(v).length / 3);
    } else if (typeof v === 'boolean' || v === null) {
      fixed += 1;
    } else if (typeof v === 'object' && depth < MAX_DEPTH) {
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) push(v[i], depth + 1, isData);
        continue;
      }
      const o = v as Record<string, unknown>;
      const media = isData ? null : mediaTokens(o, texts);
      if (media !== null) {
        fixed += media;
        continue;
      }
      const keys = Object.keys(o);
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i]!;
        const x = o[k];
        if (isData) {
          // Value below the key, so the key is read first.
          push(x, depth + 1, true);
          push(k, depth + 1, true);
        } else if (!SKIP_KEYS.has(k) && (typeof x === 'string' || (x !== null && typeof x === 'object'))) {
          push(x, depth + 1, DATA_KEYS.has(k) && !Array.isArray(x) && typeof x === 'object');
        }
      }
    }
  }
  return { texts, fixedTokens: fixed, turns: prompt.messages.length };
}

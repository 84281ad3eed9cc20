/**
 * The tools of a Responses API request, for the translators to a wire API that has no tool
 * namespaces (chat completions, Anthropic Messages): one flat list of uniquely named
 * function tools, and the way back from a wire tool name to the Responses call item.
 *
 * Where the tools are (OpenAI API reference, "Create a model response"; a real request of
 * Codex CLI 0.171.0): the top-level `tools`, and any number of input items
 * `{type:'additional_tools', role:'developer', tools:[...]}` (Codex sends its tools only
 * there). Either list holds `function` and `custom` tools and `namespace` groups
 * `{type:'namespace', name, tools:[function|custom...]}`; hosted tools (web search, file
 * search…) run on OpenAI's side only and are left out.
 *
 * Wire names: the chat and Messages APIs take tool names matching `^[A-Za-z0-9_-]{1,64}$`
 * (OpenAI's function names; Anthropic's tool names). A top-level tool and a tool of the
 * `functions` namespace keep their own name; a tool of any other namespace is offered as
 * `<namespace>__<name>` (`clock__sleep`). A name the wire would refuse has its other
 * characters replaced by `_` and, past 64 characters, is cut and ends with a hash of the
 * whole; a name already taken gets `_2`, `_3`…
 *
 * The way back: a call of a namespaced tool is a `function_call` / `custom_tool_call` item
 * with a `namespace` field (OpenAI API reference, function tool call: "Namespace qualifier
 * for tools registered as part of a namespace tool group"). Codex 0.171.0, tried against a
 * fake Responses server, runs a call to a tool of the `functions` namespace with or without
 * `namespace: "functions"`, and answers "unsupported call" to a call of another namespace's
 * tool without its namespace: a `functions` tool's call goes back unqualified (as a
 * top-level tool's), any other namespace's with its namespace.
 */
import { createHash } from 'node:crypto';
import { isObj, type Obj } from './read.js';
import { asText } from '../util/as-text.js';

/** The namespace whose tools keep their own name (Codex's own tools: `exec`, `apply_patch`…). */
export const DEFAULT_NAMESPACE = 'functions';

/**
 * The JSON schema of the function a `custom` tool (one free-form string input, e.g. Codex's
 * `apply_patch` and code-mode `exec`) is offered as; its call's arguments are `{"input": "..."}`.
 */
export const CUSTOM_TOOL_PARAMETERS = Object.freeze({
  type: 'object',
  properties: { input: { type: 'string', description: 'The raw input of the tool, exactly as the tool description asks for it.' } },
  required: ['input'],
  additionalProperties: false,
});

/** The longest tool name chat completions and Anthropic Messages accept. */
const MAX_NAME = 64;

/** One tool as the wire API is offered it. */
export interface ResponsesTool {
  /** The name on the wire (unique in the request, `[A-Za-z0-9_-]{1,64}`). */
  readonly wire: string;
  /** The tool's own name. */
  readonly name: string;
  /** The namespace its calls go back with (null: none, a top-level or `functions` tool). */
  readonly namespace: string | null;
  /** `function` (JSON arguments) or `custom` (one free-form string input). */
  readonly kind: 'function' | 'custom';
  readonly description?: string;
  /** A function's JSON schema of its arguments. */
  readonly parameters?: Obj;
  /** A function's `strict` flag, when set. */
  readonly strict?: boolean;
}

/** What a wire tool name means in Responses terms. */
export interface ToolCallName {
  readonly name: string;
  readonly namespace: string | null;
  readonly kind: 'function' | 'custom';
}

/** A tool name the wire accepts: other characters replaced, cut to 64 with a hash of the whole. */
function wireSafe(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9_-]/g, '_') || 'tool';
  if (safe.length <= MAX_NAME) return safe;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${safe.slice(0, MAX_NAME - 9)}_${hash}`;
}

const keyOf = (namespace: string | null, name: string): string => `${namespace ?? ''}\u0000${name}`;

interface Declared {
  readonly name: string;
  /** As declared (`functions` kept). */
  readonly namespace: string | null;
  readonly tool: Obj;
}

/** The function and custom tools of one tool list, namespaces opened. */
function declared(tools: unknown, into: Declared[]): void {
  if (!Array.isArray(tools)) return;
  for (const t of tools) {
    if (!isObj(t)) continue;
    if (t['type'] === 'namespace' && typeof t['name'] === 'string' && Array.isArray(t['tools'])) {
      for (const inner of t['tools'] as unknown[]) {
        if (isObj(inner) && (inner['type'] === 'function' || inner['type'] === 'custom') && typeof inner['name'] === 'string')
          into.push({ name: inner['name'], namespace: t['name'], tool: inner });
      }
    } else if ((t['type'] === 'function' || t['type'] === 'custom') && typeof t['name'] === 'string') {
      into.push({ name: t['name'], namespace: null, tool: t });
    }
  }
}

export class ResponsesTools {
  /** Every tool offered, in the order declared. */
  readonly list: readonly ResponsesTool[];
  private readonly byWireName = new Map<string, ResponsesTool>();
  /** Declared (namespace, name) -> tool. */
  private readonly byKey = new Map<string, ResponsesTool>();

  private constructor(all: readonly Declared[]) {
    const list: ResponsesTool[] = [];
    const take = (d: Declared, wanted: string): void => {
      let wire = wireSafe(wanted);
      for (let n = 2; this.byWireName.has(wire); n++) wire = `${wireSafe(wanted).slice(0, MAX_NAME - asText(n).length - 1)}_${n}`;
      const t = d.tool;
      const tool: ResponsesTool = {
        wire,
        name: d.name,
        // A `functions` tool that kept its own name is called back unqualified (see the file comment).
        namespace: d.namespace === DEFAULT_NAMESPACE && wire === d.name ? null : d.namespace,
        kind: t['type'] === 'custom' ? 'custom' : 'function',
        ...(typeof t['description'] === 'string' && t['description'] !== '' ? { description: t['description'] } : {}),
        ...(t['type'] === 'function' ? { parameters: isObj(t['parameters']) ? t['parameters'] : { type: 'object', properties: {} } } : {}),
        ...(t['type'] === 'function' && typeof t['strict'] === 'boolean' ? { strict: t['strict'] } : {}),
      };
      this.byWireName.set(wire, tool);
      this.byKey.set(keyOf(d.namespace, d.name), tool);
      list.push(tool);
    };
    // A tool declared twice (the same namespace and name) is offered once, as first declared.
    const seen = new Set<string>();
    const unique = all.filter((d) => {
      const key = keyOf(d.namespace, d.name);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    // Own names first (top-level and `functions` tools), so a namespaced tool never takes one.
    for (const d of unique) {
      if ((d.namespace === null || d.namespace === DEFAULT_NAMESPACE) && !this.byWireName.has(wireSafe(d.name))) take(d, d.name);
    }
    for (const d of unique) if (!this.byKey.has(keyOf(d.namespace, d.name))) take(d, `${d.namespace ?? DEFAULT_NAMESPACE}__${d.name}`);
    this.list = list;
  }

  /** The tools of a Responses request body: its `tools` and those of its `additional_tools` input items. */
  static of(body: Readonly<Obj>): ResponsesTools {
    const all: Declared[] = [];
    declared(body['tools'], all);
    if (Array.isArray(body['input']))
      for (const item of body['input'] as unknown[]) if (isObj(item) && item['type'] === 'additional_tools') declared(item['tools'], all);
    return new ResponsesTools(all);
  }

  /** Whether the request offers any tool to the wire. */
  get any(): boolean {
    return this.list.length > 0;
  }

  /**
   * The wire name of a call in the conversation (a `function_call` / `custom_tool_call`
   * input item, or a `tool_choice`): the offered tool's, else the name it would have.
   */
  wireName(name: string, namespace: unknown): string {
    const ns = typeof namespace === 'string' && namespace !== '' ? namespace : null;
    const found =
      this.byKey.get(keyOf(ns, name)) ??
      (ns === null ? this.byKey.get(keyOf(DEFAULT_NAMESPACE, name)) : ns === DEFAULT_NAMESPACE ? this.byKey.get(keyOf(null, name)) : undefined);
    if (found) return found.wire;
    return wireSafe(ns === null || ns === DEFAULT_NAMESPACE ? name : `${ns}__${name}`);
  }

  /** The offered tool a `tool_choice` object names (`{type:'function'|'custom', name, namespace?}`), or undefined. */
  chosen(choice: unknown): ResponsesTool | undefined {
    if (!isObj(choice) || (choice['type'] !== 'function' && choice['type'] !== 'custom') || typeof choice['name'] !== 'string') return undefined;
    return this.byWireName.get(this.wireName(choice['name'], choice['namespace']));
  }

  /** What a tool name the model called means: the offered tool's name, namespace and kind (an unknown name: a function of that name). */
  back(wire: string): ToolCallName {
    return this.byWireName.get(wire) ?? { name: wire, namespace: null, kind: 'function' };
  }
}

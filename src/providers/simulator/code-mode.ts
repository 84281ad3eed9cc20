/**
 * The simulator's shell call for an agent in "code mode": Codex 0.171.0 with its default
 * model offers no shell tool of its own, only a custom tool `exec` whose input is JavaScript
 * that calls nested tools on a global `tools` object (`await tools.exec_command({cmd})`), the
 * result shown with `text(...)`. A bridge offers that custom tool to a chat upstream as a
 * function taking one string `input` (translate/responses-chat `CUSTOM_TOOL_PARAMETERS`).
 *
 * Facts from a captured first request of `codex exec` 0.171.0 (the `exec` tool's
 * description): nested tools are declared in TypeScript as
 * `declare const tools: { exec_command(args: { cmd: string; ... }): Promise<...>; };`,
 * the shell tool is `exec_command` with the command in `cmd`, and `text(value)` appends a
 * value (stringified) to the tool's output.
 */

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Nested tools that run a shell command. */
const SHELL = /^(shell|exec_command|bash|local_shell|run_shell_command|terminal)$/i;

/** How a nested tool is declared in the `exec` description. */
const DECLARED = 'declare const tools: { ';

/** Whether a function tool is a code-mode `exec`: named `exec` (or `<namespace>.exec`, `__exec`…), taking one string `input`, its description naming nested `tools.`. */
export function isCodeModeExec(tool: { name: string; parameters: unknown; description: unknown }): boolean {
  if (!/(^|[^A-Za-z0-9])exec$/.test(tool.name) || typeof tool.description !== 'string' || !tool.description.includes('tools.')) return false;
  const props = isObj(tool.parameters) && isObj(tool.parameters['properties']) ? tool.parameters['properties'] : undefined;
  return props !== undefined && Object.keys(props).length === 1 && isObj(props['input']) && props['input']['type'] === 'string';
}

/** The nested shell tool the description declares and its command parameter (one pass with indexOf, no regex over the text). */
function nestedShell(description: string): { name: string; param: string; array: boolean } {
  for (let at = description.indexOf(DECLARED); at !== -1; at = description.indexOf(DECLARED, at + 1)) {
    const start = at + DECLARED.length;
    const open = description.indexOf('(', start);
    const name = open === -1 ? '' : description.slice(start, open);
    if (!SHELL.test(name)) continue;
    const end = description.indexOf('}): ', open);
    const params = description.slice(open, end === -1 ? open + 4000 : end);
    for (const line of params.split('\n')) {
      const m = /^\s*(cmd|command)\??:\s*(.*?);?\s*$/.exec(line.slice(0, 200));
      if (m) return { name, param: m[1]!, array: /Array<|\[\]/.test(m[2]!) };
    }
    return { name, param: 'cmd', array: false };
  }
  return { name: 'exec_command', param: 'cmd', array: false };
}

/**
 * The `input` of a call to a code-mode `exec`: JavaScript that runs `command` (argv) through
 * the nested shell tool the description declares and shows its result, e.g.
 * `text(await tools.exec_command({ cmd: "echo hello" }));`.
 */
export function codeModeInput(description: string, command: readonly string[]): string {
  const shell = nestedShell(description);
  const value = shell.array ? JSON.stringify(command) : JSON.stringify(command.join(' '));
  return `text(await tools.${shell.name}({ ${shell.param}: ${value} }));`;
}

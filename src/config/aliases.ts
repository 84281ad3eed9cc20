/**
 * Model aliases: the other names a client may send for a configured model (`aliases:` per
 * model), so the ids an agent hard-codes (Claude Code's `claude-sonnet-4-6`, dated snapshots
 * such as `claude-haiku-4-5-20251001`, Codex's `gpt-5.5-codex-latest`) reach a configured
 * model without a config per agent release. An alias is an exact name or a glob in which
 * `*` matches any run of characters (`claude-sonnet-4-6*`), matched in time linear in the
 * name (util/glob.ts: no regex is built from config text, so a long name cannot make a
 * glob backtrack). A model's own name always wins; then an exact alias; then the first
 * glob, in config order, that matches.
 */
import { globMatch } from '../util/glob.js';
import type { RawConfig } from './schema.js';
import type { GatewayConfig, Model, ModelAliases } from './types.js';

/** The served model a client's `model` names: by its name, else by one of its aliases. */
export function modelNamed(config: Pick<GatewayConfig, 'models' | 'aliases'>, name: string): Model | undefined {
  return config.models.get(name) ?? config.models.get(config.aliases.resolve(name) ?? '');
}

/**
 * @param found an alias that is a model's name, or the exact alias of two models, is
 *   appended to `problems`.
 */
export function buildAliases(models: RawConfig['models'], found: { problems: string[] }): ModelAliases {
  const names = new Set(models.map((m) => m.name));
  const exact = new Map<string, string>();
  const globs: { glob: string; model: string }[] = [];
  models.forEach((m, i) => {
    m.aliases.forEach((alias, j) => {
      const at = `/models/${i}/aliases/${j}`;
      if (alias.includes('*')) {
        globs.push({ glob: alias, model: m.name });
        return;
      }
      if (names.has(alias)) found.problems.push(`${at}: "${alias}" is the name of a model; an alias must be another name`);
      else if (exact.has(alias) && exact.get(alias) !== m.name) found.problems.push(`${at}: "${alias}" is already an alias of model "${exact.get(alias)!}"`);
      else exact.set(alias, m.name);
    });
  });
  return Object.freeze({
    resolve(name: string): string | undefined {
      if (names.has(name)) return name;
      return exact.get(name) ?? globs.find((g) => globMatch(g.glob, name))?.model;
    },
  });
}

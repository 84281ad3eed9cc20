/**
 * The docs hold together: every relative link in README.md and docs/**\/*.md points to a file
 * that exists, every `#anchor` (on the same page or another page) is a heading of its target
 * as GitHub slugs it, and the README stays a front page of at most 300 lines.
 *
 * GitHub's slugs (github-slugger): the heading's text as rendered (code spans, links and
 * emphasis reduced to their text), lower-cased, every character that is not a letter, a
 * digit, `-`, `_` or a space dropped, each space turned into `-`; a slug already taken on the
 * page gets `-1`, `-2`, ….
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

/** The repository root, from the compiled `.test-build/test/unit`. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const README_MAX_LINES = 300;

/** README.md and every `.md` file under docs/, as absolute paths. */
function markdownFiles(): string[] {
  const out = [join(ROOT, 'README.md')];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.md')) out.push(join(dir, e.name));
    }
  };
  walk(join(ROOT, 'docs'));
  return out.sort();
}

/** The page's lines outside fenced code blocks (fenced lines blanked, so numbers still match). */
function proseLines(text: string): string[] {
  let fence: string | null = null;
  return text.split('\n').map((line) => {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (m && m[1]!.startsWith(fence)) fence = null;
      return '';
    }
    if (m) {
      fence = m[1]!;
      return '';
    }
    return line;
  });
}

/** A line with each code span replaced by its text marked off, so no link is read inside one. */
function withoutCodeSpans(line: string): { text: string; code: string[] } {
  const code: string[] = [];
  const text = line.replace(/(`+)(.+?)\1/g, (_m, _ticks: string, inner: string) => {
    code.push(inner.trim());
    return `\uE000${code.length - 1}\uE000`;
  });
  return { text, code };
}

/** The text GitHub renders for a heading's markdown. */
function renderedText(markdown: string): string {
  const { text, code } = withoutCodeSpans(markdown);
  return text
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/(\*\*|__|\*)(.+?)\1/g, '$2') // emphasis
    .replace(/\uE000(\d+)\uE000/g, (_m, i: string) => code[Number(i)]!);
}

/** GitHub's slug of one heading's text (before duplicates are numbered). */
function slug(heading: string): string {
  return renderedText(heading)
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a page's headings make, duplicates numbered as github-slugger numbers them. */
function anchors(text: string): Set<string> {
  const occurrences = new Map<string, number>();
  for (const line of proseLines(text)) {
    const m = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (!m) continue;
    const original = slug(m[1]!);
    let s = original;
    while (occurrences.has(s)) {
      const n = occurrences.get(original)! + 1;
      occurrences.set(original, n);
      s = `${original}-${n}`;
    }
    occurrences.set(s, 0);
  }
  return new Set(occurrences.keys());
}

interface Link {
  readonly line: number;
  readonly target: string;
}

/** The relative link targets of a page: `[text](target)`, `![alt](target)`, `[ref]: target`. */
function relativeLinks(text: string): Link[] {
  const links: Link[] = [];
  proseLines(text).forEach((raw, i) => {
    const { text: line } = withoutCodeSpans(raw);
    const targets = [...line.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
    const ref = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(line);
    if (ref) targets.push(ref[1]!);
    for (const target of targets) {
      if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
      links.push({ line: i + 1, target });
    }
  });
  return links;
}

/** What is wrong with each relative link of `file` (empty when every one resolves). */
function brokenLinks(file: string): string[] {
  const problems: string[] = [];
  const where = (l: Link) => `${relative(ROOT, file)}:${l.line}: ${l.target}`;
  for (const l of relativeLinks(readFileSync(file, 'utf8'))) {
    const hash = l.target.indexOf('#');
    const path = decodeURIComponent(hash < 0 ? l.target : l.target.slice(0, hash));
    const anchor = hash < 0 ? null : decodeURIComponent(l.target.slice(hash + 1));
    const target = path === '' ? file : resolve(dirname(file), path);
    if (!existsSync(target)) {
      problems.push(`${where(l)}: no such file`);
      continue;
    }
    if (anchor === null || !target.endsWith('.md')) continue;
    if (!anchors(readFileSync(target, 'utf8')).has(anchor)) problems.push(`${where(l)}: no heading with that anchor in ${relative(ROOT, target)}`);
  }
  return problems;
}

describe('docs links', () => {
  test('GitHub slugs: punctuation dropped, spaces to -, duplicates numbered', () => {
    assert.equal(slug('Graceful shutdown: the drain / grace arithmetic'), 'graceful-shutdown-the-drain--grace-arithmetic');
    assert.equal(slug('How fast `/admin/spend` answers'), 'how-fast-adminspend-answers');
    assert.equal(slug('Redis (`redis.yaml`)'), 'redis-redisyaml');
    assert.equal(slug("Issue 16: the stack's own floor (2026-12-04)"), 'issue-16-the-stacks-own-floor-2026-12-04');
    assert.equal(slug('**Bold** and [a link](x.md) with `max_tokens`'), 'bold-and-a-link-with-max_tokens');
    assert.deepEqual([...anchors('# A\n## Targets\n```\n# not a heading\n```\n## Targets\n### Targets\n')], ['a', 'targets', 'targets-1', 'targets-2']);
  });

  test('every relative link in README.md and docs/ points to an existing file and heading', () => {
    const files = markdownFiles();
    assert.ok(files.length > 10, `found the docs: ${files.length} files`);
    const problems = files.flatMap(brokenLinks);
    assert.deepEqual(problems, [], `broken links:\n${problems.join('\n')}`);
  });

  test(`README.md is at most ${README_MAX_LINES} lines`, () => {
    const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines; move detail into docs/`);
  });
});

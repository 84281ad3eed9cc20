/**
 * Checks of values the schema lets through but the gateway could not use once running, so
 * that check-config, `serve` and a reload refuse them with their JSON path instead of the
 * gateway failing later: URLs that do not parse or have no host (`base_url: "https://"`
 * made `serve` die with a TypeError), header names that are not HTTP tokens and header
 * values with CR, LF or NUL (undici refuses them: every call was a 502 with no reason
 * logged), a `ledger.spool_path` that is a directory or cannot be written, and numbers
 * written in hex or octal (`port: 0x5A0D` is 23053 in YAML 1.2). No message quotes a URL or
 * a header value: they may hold secrets.
 */
import { accessSync, constants, statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { isPair, isScalar, isSeq, parseDocument, visit } from 'yaml';
import { urlProblem } from './checks.js';

/** Why `url` is not an http(s) URL with a host, or null when it is one. */
export function httpUrlProblem(url: string): string | null {
  return urlProblem(url, ['http', 'https'], 'expected http(s)://host[:port][/path]');
}

/** An HTTP field name (RFC 9110, 5.1: a token). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Whether a field value holds what RFC 9110 (5.5) does not allow in one: CR, LF, NUL and the other controls but tab. */
function badValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return true;
  }
  return false;
}

/** Errors for a block of extra headers at `where` (`/upstreams/0/headers`): bad names, values with control characters. */
export function headerProblems(headers: Readonly<Record<string, string>>, where: string): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (!TOKEN.test(name)) out.push(`${where}: ${JSON.stringify(name.slice(0, 80))} is not a valid HTTP header name (letters, digits and !#$%&'*+.^_\`|~-)`);
    else if (badValue(value)) out.push(`${where}/${name}: the value holds a CR, LF or other control character, which HTTP does not allow`);
  }
  return out;
}

/**
 * Why `path` cannot be the ledger's spool file, or null: it is a directory, or the file is
 * there and not writable, or its directory (created by the spool when missing,
 * ledger/spool.ts) is not a writable directory or cannot be created.
 */
export function spoolPathProblem(path: string): string | null {
  const full = resolve(path);
  const st = statOf(full);
  if (st?.isDirectory()) return 'is a directory; name a file in it (e.g. switchyard-ledger.jsonl)';
  if (st) return writable(full) ? null : 'is not writable by this process';
  let dir = dirname(full);
  for (;;) {
    const d = statOf(dir);
    if (d) {
      if (!d.isDirectory()) return `cannot be created: ${dir} is not a directory`;
      return writable(dir) ? null : `cannot be created: ${dir} is not writable by this process`;
    }
    const up = dirname(dir);
    if (up === dir) return 'cannot be created';
    dir = up;
  }
}

/** The path's stat; undefined when it cannot be read (missing, or a file on the way: ENOTDIR, EACCES). */
function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Errors for numbers written in hex (`0x…`) or octal (`0o…`) in the YAML `text` (already
 * known to parse): YAML reads them as numbers, so `port: 0x5A0D` would be port 23053. Each
 * names its path.
 */
export function nonDecimalNumbers(text: string): string[] {
  const out: string[] = [];
  visit(parseDocument(text), {
    Scalar(key, node, ancestors) {
      if (key === 'key' || (node.format !== 'HEX' && node.format !== 'OCT')) return;
      const chain = [...ancestors, node];
      const parts: string[] = [];
      chain.forEach((a, i) => {
        if (isPair(a)) parts.push(String(isScalar(a.key) ? a.key.value : a.key));
        else if (isSeq(a)) parts.push(String(a.items.indexOf(chain[i + 1] as never)));
      });
      out.push(`/${parts.join('/')}: numbers are written in decimal (got ${String(node.source ?? node.value).slice(0, 40)})`);
    },
  });
  return out;
}

// CPU time of a process and every process below it, read from /proc (Linux): what a gateway
// with `server.workers` spends, primary and workers together, independent of the box's cores.
import { readFileSync, readdirSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ: 100 on every Linux ABI in use; proc(5)). */
const HZ = 100;

/** { ppid, cpuS } of one process from /proc/<pid>/stat (utime + stime, fields 14-15); null when gone. */
function stat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(rest[1]), cpuS: (Number(rest[11]) + Number(rest[12])) / HZ };
  } catch {
    return null;
  }
}

/**
 * CPU seconds (user + system) used so far by process `pid` and all its live descendants.
 * A descendant that exited is not counted: read it while the processes run.
 * @returns seconds, at 10 ms resolution; null when `pid` is gone.
 */
export function treeCpuSeconds(pid) {
  const all = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(name);
    if (s) all.set(Number(name), s);
  }
  if (!all.has(pid)) return null;
  let total = 0;
  const todo = [pid];
  while (todo.length > 0) {
    const p = todo.pop();
    total += all.get(p).cpuS;
    for (const [child, s] of all) if (s.ppid === p) todo.push(child);
  }
  return Math.round(total * 100) / 100;
}

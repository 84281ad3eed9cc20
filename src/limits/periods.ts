/** Time arithmetic of the limits: OpenAI's reset-duration format and UTC budget periods. */

/** OpenAI's reset duration format: `1s`, `6m0s`, `59ms`. */
export function resetDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const s = Math.ceil(ms / 1000);
  const m = Math.floor(s / 60);
  return m > 0 ? `${m}m${s % 60}s` : `${s}s`;
}

/** End of the current UTC day or month, epoch ms, and the period's id. */
export function periodOf(period: 'day' | 'month', now = new Date()): { id: string; endMs: number } {
  const y = now.getUTCFullYear();
  const mo = now.getUTCMonth();
  if (period === 'day') {
    const d = now.getUTCDate();
    return { id: now.toISOString().slice(0, 10), endMs: Date.UTC(y, mo, d + 1) };
  }
  return { id: now.toISOString().slice(0, 7), endMs: Date.UTC(y, mo + 1, 1) };
}

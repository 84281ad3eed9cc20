/**
 * MONITOR on a real redis-server, for tests that count the commands a gateway sends.
 *
 * ioredis sets a monitor connection's status to `monitoring` in a promise continuation after
 * MONITOR's `+OK` (redis/event_handler.js); a monitor line that arrives in the same read as
 * that `+OK` (another client busy on the server meanwhile: a gateway's heartbeat, a new
 * client's ready-check INFO) is taken for the reply of a command it never sent, and the
 * connection emits "Command queue state error" with no listener: an uncaught error that
 * failed an unrelated test under CI's load (ioredis issue #1981; bullmq #2505 shows the same
 * `"info"` line). Here that error is kept (`errors`) for the counting tests to assert on,
 * and `start` retries a MONITOR that failed so, and returns only once a marker ECHO sent
 * after it has been seen, so the lines that follow are read in monitoring mode.
 */
import type { Redis } from 'ioredis';

export class CommandMonitor {
  /** Top-level commands seen, each with its arguments (commands run by scripts left out). */
  readonly seen: string[][] = [];
  /** Errors of the monitor connection, kept rather than thrown. */
  readonly errors: Error[] = [];

  private constructor(private readonly conn: Redis) {}

  /** Starts MONITOR on `client`'s server (a duplicate connection); resolves once it reads in step. */
  static async start(client: Redis): Promise<CommandMonitor> {
    let conn: Redis | null = null;
    for (let attempt = 1; conn === null; attempt++) {
      try {
        conn = await client.monitor();
      } catch (err) {
        if (attempt === 3) throw err;
      }
    }
    const m = new CommandMonitor(conn);
    conn.on('error', (err: Error) => m.errors.push(err));
    const marker = `monitor-ready-${process.pid}-${Date.now()}`;
    let ready = false;
    conn.on('monitor', (_time: string, args: string[], source: string) => {
      if (!ready) {
        ready = args[0]?.toLowerCase() === 'echo' && args[1] === marker;
        return;
      }
      if (source !== 'lua') m.seen.push(args);
    });
    for (let i = 0; i < 100 && !ready; i++) {
      await client.echo(marker);
      await new Promise<void>((r) => setTimeout(r, 20));
    }
    if (!ready) throw new Error(`MONITOR never reported the marker command; errors: ${m.errors.map((e) => e.message).join('; ')}`);
    return m;
  }

  /** Commands seen since index `from`, lower-cased names only. */
  names(from: number): string[] {
    return this.seen.slice(from).map((args) => args[0]!.toLowerCase());
  }

  stop(): void {
    this.conn.disconnect();
  }
}

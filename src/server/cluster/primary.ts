/**
 * The primary process of `server.workers: N` (N > 1): it serves no requests. It forks N
 * workers through node:cluster (each runs `switchyard serve` again and shares the port,
 * connections handed out round-robin; the primary's node flags, `execArgv`, go to each),
 * and then:
 * - a worker that exits while the group runs is replaced after a backoff: 0.5 s, doubled for
 *   each worker of that place that died within 10 s of starting, at most 30 s; one log line each;
 * - a worker that fails before the group ever started (bad port, bad config) stops the
 *   group: the primary exits 1 (the worker printed why);
 * - SIGHUP: every ready worker reloads the config (each logs the outcome);
 * - SIGTERM / SIGINT: every worker drains as a single process would (`server.drain_ms`); the
 *   primary exits 0 once all exited 0, or 1 past drain_ms + margin (it kills what is left);
 *   a second signal makes the workers exit 1 at once;
 * - `/metrics` on any worker reports the sum of all (server/cluster/metrics.ts).
 * The signals reach workers as IPC messages, not signals: a worker that also gets the
 * signal itself (Ctrl-C in a terminal, systemd's control-group kill) drains once.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { MetricsCollector } from './metrics.js';
import { ours, WORKER_COUNT_ENV, WORKER_SLOT_ENV, type ToPrimary, type ToWorker } from './messages.js';

export interface PrimaryOptions {
  /** Worker processes, ≥ 2. */
  readonly workers: number;
  /** `server.drain_ms` plus the shutdown margin each worker gets (ms): the wait for them to exit. */
  readonly stopMs: number;
  readonly logger: Logger;
  /** The first restart's delay (ms); doubled per quick death, at most `maxRestartMs`. */
  readonly restartMs?: number;
  readonly maxRestartMs?: number;
}

/** A worker that lived less than this after its start counts as a quick death (ms). */
const QUICK_DEATH_MS = 10_000;
/** Past the workers' own limit, time for their exit to reach the primary (ms). */
const EXIT_SLACK_MS = 2_000;

interface Slot {
  readonly n: number;
  worker: Worker | null;
  ready: boolean;
  startedAt: number;
  quickDeaths: number;
  restart: NodeJS.Timeout | null;
}

/**
 * Runs the primary until every worker is gone.
 * @returns the exit code: 0 after a clean shutdown, 1 after a failed start, a forced or
 *          timed-out shutdown, or a worker exiting non-zero while stopping.
 */
export function runPrimary(o: PrimaryOptions): Promise<number> {
  const log = o.logger;
  const restartMs = o.restartMs ?? 500;
  const maxRestartMs = o.maxRestartMs ?? 30_000;
  const metrics = new MetricsCollector();
  const slots: Slot[] = Array.from({ length: o.workers }, (_, i) => ({ n: i + 1, worker: null, ready: false, startedAt: 0, quickDeaths: 0, restart: null }));
  let started = false;
  let stopping: string | null = null;
  let code = 0;
  let hardStop: NodeJS.Timeout | null = null;
  let finish: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => (finish = resolve));

  const send = (w: Worker | null, m: ToWorker): void => {
    if (w?.isConnected()) w.send(m);
  };
  const readyWorkers = (): Worker[] => slots.filter((s) => s.ready && s.worker).map((s) => s.worker!);

  const fork = (slot: Slot): void => {
    slot.restart = null;
    slot.ready = false;
    slot.startedAt = Date.now();
    const w = cluster.fork({ [WORKER_SLOT_ENV]: String(slot.n), [WORKER_COUNT_ENV]: String(o.workers) });
    slot.worker = w;
    w.on('message', (raw: unknown) => onMessage(slot, w, ours<ToPrimary>(raw)));
  };

  const onMessage = (slot: Slot, w: Worker, m: ToPrimary | null): void => {
    if (!m || slot.worker !== w) return;
    switch (m.switchyard) {
      case 'ready':
        slot.ready = true;
        if (stopping) send(w, { switchyard: 'shutdown', signal: stopping });
        else if (started) log.info({ worker: slot.n, worker_pid: w.process.pid }, `worker ${slot.n} restarted`);
        else if (slots.every((s) => s.ready)) {
          started = true;
          log.info({ workers: o.workers, worker_pids: slots.map((s) => s.worker?.process.pid) }, `${o.workers} workers started`);
        }
        return;
      case 'reload-others':
        for (const other of readyWorkers()) if (other !== w) send(other, { switchyard: 'reload' });
        return;
      case 'collected':
        metrics.collected(w.id, m.id, m.metrics);
        return;
      case 'metrics':
        metrics.collect(readyWorkers()).then(
          (text) => send(w, { switchyard: 'metrics', id: m.id, text }),
          (err: Error) => send(w, { switchyard: 'metrics', id: m.id, error: err.message }),
        );
        return;
    }
  };

  const onExit = (w: Worker, exitCode: number | null, signal: string | null): void => {
    const slot = slots.find((s) => s.worker === w);
    metrics.exited(w.id);
    if (!slot) return;
    slot.worker = null;
    const wasReady = slot.ready;
    slot.ready = false;
    const exit = { worker: slot.n, worker_pid: w.process.pid, code: exitCode, signal };
    if (stopping) {
      // A worker killed by our SIGTERM before it could drain (still starting) served nothing.
      if (exitCode !== 0 && !(signal === 'SIGTERM' && !wasReady)) code = 1;
      if (slots.every((s) => !s.worker)) end();
      return;
    }
    if (!started) {
      log.error(exit, `worker ${slot.n} exited before the workers started; stopping`);
      code = 1;
      stop('startup failure');
      return;
    }
    slot.quickDeaths = Date.now() - slot.startedAt < QUICK_DEATH_MS ? slot.quickDeaths + 1 : 0;
    const delay = Math.min(maxRestartMs, restartMs * 2 ** slot.quickDeaths);
    log.warn({ ...exit, restart_in_ms: delay }, `worker ${slot.n} exited unexpectedly; restarting it in ${delay} ms`);
    slot.restart = setTimeout(() => fork(slot), delay);
  };

  const end = (): void => {
    if (hardStop) clearTimeout(hardStop);
    cluster.off('exit', onExit);
    for (const s of ['SIGHUP', 'SIGTERM', 'SIGINT'] as const) process.off(s, onSignal);
    log.info({ code }, 'all workers stopped');
    log.flush();
    finish(code);
  };

  const stop = (signal: string): void => {
    stopping = signal;
    for (const s of slots) {
      if (s.restart) clearTimeout(s.restart);
      s.restart = null;
      // A worker still starting has no shutdown handler yet: its default SIGTERM ends it.
      if (s.ready) send(s.worker, { switchyard: 'shutdown', signal });
      else s.worker?.process.kill('SIGTERM');
    }
    if (slots.every((s) => !s.worker)) {
      end();
      return;
    }
    hardStop = setTimeout(() => {
      const left = slots.filter((s) => s.worker);
      log.error({ workers: left.map((s) => s.n) }, `workers still running ${o.stopMs + EXIT_SLACK_MS} ms after ${signal}; killing them`);
      code = 1;
      for (const s of left) s.worker?.process.kill('SIGKILL');
    }, o.stopMs + EXIT_SLACK_MS);
  };

  const onSignal = (signal: NodeJS.Signals): void => {
    if (signal === 'SIGHUP') {
      if (stopping) return;
      log.info({ workers: readyWorkers().length }, 'SIGHUP: the workers reload the config');
      for (const w of readyWorkers()) send(w, { switchyard: 'reload' });
      return;
    }
    if (stopping) {
      log.error({ signal }, `second ${signal}: the workers exit now`);
      code = 1;
      for (const s of slots) send(s.worker, { switchyard: 'force' });
      return;
    }
    log.info({ signal, workers: slots.filter((s) => s.worker).length }, 'shutting down: the workers drain their requests in flight');
    stop(signal);
  };

  cluster.on('exit', onExit);
  for (const s of ['SIGHUP', 'SIGTERM', 'SIGINT'] as const) process.on(s, onSignal);
  log.info({ workers: o.workers }, `starting ${o.workers} workers`);
  for (const slot of slots) fork(slot);
  return done;
}

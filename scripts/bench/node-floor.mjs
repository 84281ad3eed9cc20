// The `node-floor` reference target of bench:overhead: scripts/bench/node-floor-server.mjs
// (Fastify + undici, relaying with no gateway work) on CPU 1, with the node flags of the
// current build's `npm start`, so the closed loop shows what the fixed stack costs by itself.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, start, waitHttp } from './overhead-setup.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Starts the floor relay in front of the mock at `mockPort` with node `flags` (string[]);
 * `workers` > 1 runs that many processes under node:cluster (the workers arm's reference),
 * on `cpus` (CPU 1 by default).
 * Returns an arm: { name, kind: 'node-floor', url, pid, child, cpus, node_flags, workers }.
 */
export async function startNodeFloor(work, mockPort, flags, { name = 'node-floor', workers = 1, cpus = 1 } = {}) {
  const port = await freePort();
  const child = start(cpus, process.execPath, [...flags, join(here, 'node-floor-server.mjs'), String(port), `http://127.0.0.1:${mockPort}`, String(workers)], {
    log: join(work, `${name}.log`),
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHttp(`${url}/health`, 10_000);
  return { name, kind: 'node-floor', url, pid: child.pid, child, cpus: String(cpus), node_flags: flags, workers };
}

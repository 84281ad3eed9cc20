// The `node-floor` reference target of bench:overhead: scripts/bench/node-floor-server.mjs
// (Fastify + undici, relaying with no gateway work) on CPU 1, with the node flags of the
// current build's `npm start`, so the closed loop shows what the fixed stack costs by itself.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, start, waitHttp } from './overhead-setup.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Starts the floor relay in front of the mock at `mockPort` with node `flags` (string[]).
 * Returns an arm: { name: 'node-floor', kind, url, pid, child, cpus, node_flags }.
 */
export async function startNodeFloor(work, mockPort, flags) {
  const port = await freePort();
  const child = start(1, process.execPath, [...flags, join(here, 'node-floor-server.mjs'), String(port), `http://127.0.0.1:${mockPort}`], {
    log: join(work, 'node-floor.log'),
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHttp(`${url}/health`, 10_000);
  return { name: 'node-floor', kind: 'node-floor', url, pid: child.pid, child, cpus: '1', node_flags: flags };
}

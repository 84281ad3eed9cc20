#!/usr/bin/env node
// The floor of the gateway's fixed stack (bench:overhead's `node-floor` reference target):
// Fastify in front of an undici Pool, relaying POST /v1/chat/completions to the mock with no
// gateway work at all (no body parse, no auth, no routing, no log line, no metrics): the
// request body is passed on as bytes and the answer is streamed back as it arrives. What
// Switchyard adds over this is what its own work costs; what this adds over direct is what
// Node.js, Fastify and undici cost on their own.
//
//   node scripts/bench/node-floor-server.mjs <port> <upstream origin> [workers]
//
// With workers > 1 it forks that many processes through node:cluster sharing the port, as
// Switchyard's `server.workers` does (connections handed out round-robin by the primary): the
// workers arm's reference for what a second process costs the stack by itself.
import cluster from 'node:cluster';
import Fastify from 'fastify';
import { Pool } from 'undici';

const [port, upstream, workersArg = '1'] = process.argv.slice(2);
const workers = Number(workersArg);
if (workers > 1 && cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
  for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => process.exit(0));
} else await serve();

async function serve() {
  const pool = new Pool(upstream, { connections: 256, keepAliveTimeout: 60_000 });
  const app = Fastify({ logger: false, bodyLimit: 32 * 1024 * 1024 });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.get('/health', async () => ({ ok: true }));
  app.post('/v1/chat/completions', async (req, reply) => {
    const r = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body: req.body });
    reply.code(r.statusCode);
    const type = r.headers['content-type'];
    if (type) reply.header('content-type', type);
    return reply.send(r.body);
  });
  await app.listen({ port: Number(port), host: '127.0.0.1' });
}

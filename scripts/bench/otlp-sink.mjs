// A minimal OTLP/HTTP receiver for the tracing arm: reads each export, answers 200, counts
// exports, bytes and spans (GET /stats). Spans are counted by their names' bytes in the
// protobuf body: every span here is named `chat gpt-mock-…` (a call's and its attempt's alike).
import { freePort, start, waitHttp } from './overhead-setup.mjs';

const SINK = `
const http = require('node:http');
const NAME = Buffer.from('chat gpt-mock-');
let exports = 0, bytes = 0, spans = 0;
http.createServer((req, res) => {
  if (req.method === 'GET') { res.end(JSON.stringify({ exports, bytes, spans })); return; }
  const parts = [];
  req.on('error', () => {});
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    const body = Buffer.concat(parts);
    exports++;
    bytes += body.length;
    for (let i = body.indexOf(NAME); i >= 0; i = body.indexOf(NAME, i + NAME.length)) spans++;
    res.writeHead(200, { 'content-type': req.headers['content-type'] || 'application/x-protobuf' });
    res.end();
  });
}).listen(Number(process.argv[1]), '127.0.0.1');
`;

/** Starts the sink on CPU 0; returns { child, url }. */
export async function startSink() {
  const port = await freePort();
  const child = start(0, process.execPath, ['-e', SINK, String(port)]);
  const url = `http://127.0.0.1:${port}`;
  await waitHttp(`${url}/stats`);
  return { child, url };
}

/** The sink's counters { exports, bytes, spans } (a fresh connection: a pooled one may have been closed while idle). */
export async function sinkCounters(url) {
  for (let i = 0; ; i++) {
    try {
      return await (await fetch(`${url}/stats`, { headers: { connection: 'close' } })).json();
    } catch (err) {
      if (i >= 2) throw err;
    }
  }
}

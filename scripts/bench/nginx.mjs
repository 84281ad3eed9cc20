// The nginx reference target: a plain keep-alive reverse proxy in front of the mock, the
// cost of one extra loopback hop with no application work (the harness README's config).
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, start, waitHttp } from './overhead-setup.mjs';

/** The nginx binary on PATH (or /usr/sbin/nginx), else null. */
export function findNginx() {
  try {
    return execFileSync('sh', ['-c', 'command -v nginx || ls /usr/sbin/nginx'], { encoding: 'utf8' }).trim().split('\n')[0] || null;
  } catch {
    return null;
  }
}

/**
 * Starts nginx on CPU 1 with its prefix, pid file, error log and temp paths in
 * <work>/nginx (no root paths). `daemon off` keeps the master as our child, so SIGTERM stops it.
 * Returns an arm: { name: 'nginx', kind, url, pid, child, cpus, node_flags: null, version }.
 */
export async function startNginx(bin, work, mockPort) {
  const prefix = join(work, 'nginx');
  mkdirSync(join(prefix, 'temp'), { recursive: true });
  const port = await freePort();
  const temps = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(prefix, 'temp', t)};`).join('\n');
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes 1;
daemon off;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
${temps}
  upstream mock { server 127.0.0.1:${mockPort}; keepalive 256; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://mock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
`,
  );
  const child = start(1, bin, ['-p', prefix, '-e', join(prefix, 'error.log'), '-c', conf], { log: join(work, 'nginx.log') });
  const url = `http://127.0.0.1:${port}`;
  await waitHttp(`${url}/health`, 10_000);
  const version = execFileSync('sh', ['-c', `"${bin}" -v 2>&1`], { encoding: 'utf8' }).trim() || null;
  return { name: 'nginx', kind: 'nginx', url, pid: child.pid, child, cpus: '1', node_flags: null, version };
}

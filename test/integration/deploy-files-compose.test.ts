/**
 * docker-compose.yml, checked without a Docker engine: its services, bind mounts, env,
 * health checks and stop grace period, and docker/switchyard.yaml passing the gateway's own
 * config validation.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { parseTestConfig } from '../helpers/config.js';
import { ROOT, SWITCHYARDS, apiKeyVars, arr, compose, composeMounts, drainMs, obj, read, services, shutdownMarginMs } from '../helpers/deploy-files.js';

function seconds(d: unknown): number {
  const m = /^(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/.exec(String(d));
  assert.ok(m && (m[1] || m[2]), `duration ${String(d)}`);
  return Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0);
}

describe('docker-compose.yml', () => {
  test('has two switchyard replicas, redis, postgres, prometheus and grafana', () => {
    assert.deepEqual(Object.keys(services).sort(), ['grafana', 'postgres', 'prometheus', 'redis', ...SWITCHYARDS].sort());
    assert.match(String(obj(services['postgres'], 'postgres')['image']), /^postgres:\d+/);
    assert.equal(obj(services['redis'], 'redis')['image'], 'redis:7-alpine');
    assert.match(String(obj(services['prometheus'], 'prometheus')['image']), /^prom\/prometheus:/);
    assert.match(String(obj(services['grafana'], 'grafana')['image']), /^grafana\/grafana:/);
  });

  test('every bind-mounted host path exists', () => {
    for (const [name, svc] of Object.entries(services)) {
      for (const m of composeMounts(obj(svc, name))) assert.ok(existsSync(join(ROOT, m.source)), `${name}: ${m.source} exists`);
    }
  });

  test('each switchyard replica: built from the Dockerfile, one read-only config, Redis, provider keys from the host, health check, drain fits the stop grace period', () => {
    const configText = read('docker/switchyard.yaml');
    const spoolVolumes = new Set<string>();
    for (const name of SWITCHYARDS) {
      const svc = obj(services[name], name);
      const build = obj(svc['build'], `${name}.build`);
      assert.equal(build['context'], '.');
      assert.ok(existsSync(join(ROOT, String(build['dockerfile'] ?? 'Dockerfile'))));
      const env = obj(svc['environment'], `${name}.environment`);
      assert.equal(env['REDIS_URL'], 'redis://redis:6379');
      assert.equal(env['HOST'], '0.0.0.0');
      const mounts = composeMounts(svc);
      const cfg = mounts.find((m) => m.target === env['SWITCHYARD_CONFIG']);
      assert.ok(cfg, `${name}: SWITCHYARD_CONFIG is a mounted file`);
      assert.equal(posix.normalize(cfg.source), 'docker/switchyard.yaml');
      assert.ok(cfg.readOnly, 'mounted read-only');
      for (const v of apiKeyVars(configText)) assert.equal(env[v], `\${${v}:-}`, `${name}: ${v} passed from the host, empty when unset`);
      assert.deepEqual(obj(svc['depends_on'], 'depends_on')['redis'], { condition: 'service_healthy' });
      assert.deepEqual(obj(svc['depends_on'], 'depends_on')['postgres'], { condition: 'service_healthy' });
      // The ledger: DATABASE_URL names the postgres service with its user, password and database.
      const pgEnv = obj(obj(services['postgres'], 'postgres')['environment'], 'postgres.environment');
      const db = new URL(String(env['DATABASE_URL']).replace('${POSTGRES_PASSWORD:-switchyard}', 'pw'));
      assert.equal(db.hostname, 'postgres');
      assert.equal(db.username, pgEnv['POSTGRES_USER']);
      assert.equal(db.pathname, `/${String(pgEnv['POSTGRES_DB'])}`);
      assert.equal(String(env['DATABASE_URL']).includes(String(pgEnv['POSTGRES_PASSWORD'])), true, 'the same password variable');
      // Its spool sits on a named volume of the replica's own (the root filesystem is read-only).
      const spool = (parseYaml(configText) as { ledger: { spool_path: string } }).ledger.spool_path;
      const vols = ((svc['volumes'] as unknown[]) ?? []).filter((v): v is string => typeof v === 'string' && !/^[./]/.test(v));
      const named = vols.map((v) => v.split(':')).find(([, target]) => spool.startsWith(`${target}/`));
      assert.ok(named && obj(compose['volumes'], 'volumes')[named[0]!] !== undefined, `${name}: a named volume holds ${spool}`);
      spoolVolumes.add(named![0]!);
      const hc = obj(svc['healthcheck'], 'healthcheck');
      assert.match(JSON.stringify(hc['test']), /\/healthz/);
      assert.ok(!/\bcurl\b|\bwget\b/.test(JSON.stringify(hc['test'])));
      const ports = arr(svc['ports'], 'ports').map(String);
      assert.ok(
        ports.every((p) => p.startsWith('127.0.0.1:') && p.endsWith(':8080')),
        `${name}: host ports on loopback only (the demo key is public): ${ports.join(', ')}`,
      );
      const worst = (drainMs(configText) + shutdownMarginMs()) / 1000;
      assert.ok(seconds(svc['stop_grace_period']) > worst, `${name}: stop_grace_period > server.drain_ms + shutdown margin (${worst} s)`);
    }
    assert.equal(spoolVolumes.size, SWITCHYARDS.length, 'one spool volume per replica');
    assert.match(read('Dockerfile'), /mkdir -p \/var\/lib\/switchyard && chown node:node \/var\/lib\/switchyard/);
    // Both replicas share state: the config says so.
    assert.equal((parseYaml(configText) as { store: { replicas: number } }).store.replicas, SWITCHYARDS.length);
  });

  test('redis has a redis-cli ping health check', () => {
    const hc = obj(obj(services['redis'], 'redis')['healthcheck'], 'healthcheck');
    assert.deepEqual(hc['test'], ['CMD', 'redis-cli', 'ping']);
  });

  test('docker/switchyard.yaml passes the gateway config validation (no keys, and with keys)', () => {
    const text = read('docker/switchyard.yaml');
    const noKeys = parseTestConfig(text, {}, 'docker/switchyard.yaml');
    assert.ok(noKeys.models.size > 0, 'models served by the simulator');
    assert.equal(noKeys.store.replicas, 2);
    const keys = Object.fromEntries(apiKeyVars(text).map((v) => [v, 'sk-test']));
    const live = parseTestConfig(text, { ...keys, REDIS_URL: 'redis://redis:6379' }, 'docker/switchyard.yaml');
    assert.equal(live.store.redis_url, 'redis://redis:6379');
    assert.ok(live.upstreamStatus.some((u) => u.mode === 'live'));
  });
});

/**
 * docker/prometheus/prometheus.yml: its scrape targets, where the compose service mounts
 * it, and `promtool check config` when promtool is installed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join, posix } from 'node:path';
import { describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { ROOT, SWITCHYARDS, arr, composeMounts, have, obj, read, services } from '../helpers/deploy-files.js';

describe('prometheus.yml', () => {
  const prom = obj(parseYaml(read('docker/prometheus/prometheus.yml')), 'prometheus.yml');

  test('scrapes /metrics of both switchyard replicas on their container port', () => {
    const job = arr(prom['scrape_configs'], 'scrape_configs')
      .map((j) => obj(j, 'job'))
      .find((j) => j['job_name'] === 'switchyard');
    assert.ok(job, 'a switchyard job');
    assert.equal(job['metrics_path'] ?? '/metrics', '/metrics');
    const targets = arr(job['static_configs'], 'static_configs').flatMap((s) => arr(obj(s, 'static_config')['targets'], 'targets'));
    const expected = SWITCHYARDS.map((name) => `${name}:${String(obj(obj(services[name], name)['environment'], 'env')['PORT'] ?? 8080)}`);
    assert.deepEqual([...targets].sort(), expected.sort());
  });

  test('the compose service mounts it where --config.file points', () => {
    const svc = obj(services['prometheus'], 'prometheus');
    const file = arr(svc['command'], 'command')
      .map(String)
      .find((c) => c.startsWith('--config.file='))
      ?.slice('--config.file='.length);
    assert.ok(file);
    const m = composeMounts(svc).find((x) => x.target === file);
    assert.equal(m?.source && posix.normalize(m.source), 'docker/prometheus/prometheus.yml');
  });

  test('promtool check config', (t) => {
    if (!have('promtool')) {
      t.skip('promtool is not installed');
      return;
    }
    const r = spawnSync('promtool', ['check', 'config', join(ROOT, 'docker/prometheus/prometheus.yml')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });
});

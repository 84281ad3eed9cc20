/**
 * Grafana provisioning and the dashboard (docker/grafana): every PromQL metric name exists
 * in a real gateway's /metrics, every label it groups or filters by exists on those
 * metrics, and (with promtool) every expression parses.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { fixtureJson } from '../helpers/recordings.js';
import { startWithUpstream, waitFor, type TestGateway } from '../helpers/gateway.js';
import { ROOT, arr, composeMounts, have, isObj, obj, read, services } from '../helpers/deploy-files.js';

interface Panel {
  id?: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: { expr: string; refId: string; datasource?: { uid: string } }[];
  panels?: Panel[];
}

const dashboard = JSON.parse(read('docker/grafana/dashboards/switchyard.json')) as { uid: string; title: string; panels: Panel[] };
const allPanels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const queries = allPanels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, ...t })));

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan', 'atan2']);
/** Labels Prometheus adds to every scraped series (target labels of prometheus.yml). */
const TARGET_LABELS = new Set(['instance', 'job', 'deployment']);
/** Non-gateway series a panel may use. */
const PROMETHEUS_SERIES: Record<string, string[]> = { up: [] };

/** Metric names a PromQL expression selects. */
function promqlMetrics(expr: string): string[] {
  const e = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const out: string[] = [];
  for (const m of e.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const before = e[m.index - 1];
    if (before && /[0-9.]/.test(before)) continue; // exponent of a number
    if (
      e
        .slice(m.index + m[0].length)
        .trimStart()
        .startsWith('(')
    )
      continue; // function / aggregation
    if (KEYWORDS.has(m[0].toLowerCase())) continue;
    out.push(m[0]);
  }
  return out;
}

/** Label names an expression groups by or matches on. */
function promqlLabels(expr: string): string[] {
  const e = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const out: string[] = [];
  for (const m of e.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g))
    out.push(
      ...m[1]!
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );
  for (const m of e.matchAll(/\{([^}]*)\}/g)) for (const l of m[1]!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) out.push(l[1]!);
  return out;
}

describe('Grafana provisioning and dashboard', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  /** Metric family name -> type, from a real gateway's /metrics. */
  const families = new Map<string, string>();

  before(async () => {
    ({ upstream, gw } = await startWithUpstream());
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
    await gw.client().chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    await waitFor(() => gw.finished().length === 1, 2000, 'request finished');
    const text = await gw.metricsText();
    for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(m[1]!, m[2]!);
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const datasources = obj(parseYaml(read('docker/grafana/provisioning/datasources/prometheus.yml')), 'datasources file');
  const providers = obj(parseYaml(read('docker/grafana/provisioning/dashboards/switchyard.yml')), 'dashboards file');
  const grafana = obj(services['grafana'], 'grafana');

  test('the datasource is the compose Prometheus, with a fixed uid', () => {
    assert.equal(datasources['apiVersion'], 1);
    const ds = arr(datasources['datasources'], 'datasources').map((d) => obj(d, 'datasource'));
    assert.equal(ds.length, 1);
    assert.equal(ds[0]!['type'], 'prometheus');
    const url = new URL(String(ds[0]!['url']));
    assert.ok(url.hostname in services, `${url.hostname} is a compose service`);
    assert.equal(url.hostname, 'prometheus');
    assert.equal(url.port, '9090');
    assert.ok(ds[0]!['uid'], 'a fixed uid the dashboard refers to');
  });

  test('grafana mounts the provisioning folder and the dashboards folder the provider reads', () => {
    assert.equal(providers['apiVersion'], 1);
    const p = arr(providers['providers'], 'providers').map((x) => obj(x, 'provider'));
    assert.equal(p[0]!['type'], 'file');
    const path = obj(p[0]!['options'], 'options')['path'];
    const mounts = composeMounts(grafana);
    const dash = mounts.find((m) => m.target === path);
    assert.ok(dash, `provider path ${String(path)} is mounted`);
    assert.equal(posix.normalize(dash.source), 'docker/grafana/dashboards');
    assert.ok(existsSync(join(ROOT, dash.source, 'switchyard.json')));
    const prov = mounts.find((m) => m.target === '/etc/grafana/provisioning');
    assert.ok(prov, 'provisioning mounted at /etc/grafana/provisioning');
    for (const sub of ['datasources', 'dashboards']) assert.ok(statSync(join(ROOT, prov.source, sub)).isDirectory(), sub);
    for (const sub of ['datasources', 'dashboards']) {
      for (const f of readdirSync(join(ROOT, prov.source, sub)))
        assert.ok(isObj(parseYaml(readFileSync(join(ROOT, prov.source, sub, f), 'utf8'))), `${sub}/${f} parses`);
    }
  });

  test('every panel uses the provisioned datasource; ids are unique', () => {
    const uid = obj(arr(datasources['datasources'], 'datasources')[0], 'datasource')['uid'];
    assert.equal(dashboard.uid, 'switchyard');
    const ids = allPanels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'unique panel ids');
    for (const p of allPanels.filter((x) => x.type !== 'row')) {
      assert.equal(p.datasource?.uid, uid, `${p.title}: datasource`);
      assert.ok((p.targets ?? []).length > 0, `${p.title}: has queries`);
      for (const t of p.targets ?? []) if (t.datasource) assert.equal(t.datasource.uid, uid, `${p.title} ${t.refId}: datasource`);
    }
  });

  test('covers requests, errors, latency, TTFT, windows, sheds, retries, fallbacks, spend and the store mode', () => {
    const used = new Set(queries.flatMap((q) => promqlMetrics(q.expr)));
    for (const m of [
      'switchyard_requests_total',
      'switchyard_upstream_errors_total',
      'switchyard_request_duration_seconds_bucket',
      'switchyard_time_to_first_token_seconds_bucket',
      'switchyard_deep_in_flight',
      'switchyard_sheds_total',
      'switchyard_retries_total',
      'switchyard_fallbacks_total',
      'switchyard_spend_usd_total',
      'switchyard_store_mode',
    ]) {
      assert.ok(used.has(m), m);
    }
    for (const q of queries.filter((x) => /_bucket\b/.test(x.expr))) {
      assert.match(q.expr, /histogram_quantile\(\s*0?\.\d+\s*,\s*sum by \((le\b[^)]*|[^)]*\ble)\)/, `${q.panel}: histogram_quantile over sum by (le, ...)`);
    }
  });

  test("every metric a query selects is in the gateway's real /metrics output", () => {
    assert.ok(families.has('switchyard_requests_total'), 'the scrape worked');
    for (const q of queries) {
      const names = promqlMetrics(q.expr);
      assert.ok(names.length > 0, `${q.panel}: selects a metric: ${q.expr}`);
      for (const n of names) {
        if (n in PROMETHEUS_SERIES) continue;
        const base = n.replace(/_(bucket|sum|count)$/, '');
        const ok =
          families.has(n) ||
          (n.endsWith('_bucket') && families.get(base) === 'histogram') ||
          (/_(sum|count)$/.test(n) && ['histogram', 'summary'].includes(families.get(base) ?? ''));
        assert.ok(ok, `${q.panel}: ${n} is not exported by the gateway (${q.expr})`);
      }
    }
  });

  test('every label a query groups by or matches on exists on the metrics it selects', () => {
    for (const q of queries) {
      const allowed = new Set(TARGET_LABELS);
      for (const n of promqlMetrics(q.expr)) {
        if (n in PROMETHEUS_SERIES) {
          for (const l of PROMETHEUS_SERIES[n]!) allowed.add(l);
          continue;
        }
        const base = families.has(n) ? n : n.replace(/_(bucket|sum|count)$/, '');
        if (n.endsWith('_bucket')) allowed.add('le');
        const metric = gw.metrics.registry.getSingleMetric(base) as unknown as { labelNames?: readonly string[] } | undefined;
        assert.ok(metric, `${base} is registered`);
        for (const l of metric.labelNames ?? []) allowed.add(l);
      }
      for (const l of promqlLabels(q.expr)) assert.ok(allowed.has(l), `${q.panel}: label "${l}" is not on ${promqlMetrics(q.expr).join(', ')} (${q.expr})`);
    }
  });

  test('every query parses as PromQL (promtool check rules)', (t) => {
    if (!have('promtool')) {
      t.skip('promtool is not installed');
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-promql-'));
    try {
      const rules = queries.map((q, i) => ({
        record: `dashboard:query_${i}`,
        // Grafana's interval variables, as Grafana would substitute them.
        expr: q.expr.replace(/\$__rate_interval|\$__interval/g, '1m').replace(/\$__range/g, '1h'),
      }));
      assert.ok(!rules.some((r) => r.expr.includes('$')), 'no other template variables');
      const file = join(dir, 'rules.json');
      writeFileSync(file, JSON.stringify({ groups: [{ name: 'dashboard', rules }] }));
      const r = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.match(r.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The Kubernetes manifests (docker/k8s), checked without an API server: probes, ports,
 * security context, secrets, annotations and the shutdown arithmetic (grace period >
 * preStop + drain), the ConfigMap's switchyard config passing the gateway's own validation,
 * and kubectl's parse.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { parseTestConfig } from '../helpers/config.js';
import { ROOT, apiKeyVars, arr, drainMs, have, obj, read, shutdownMarginMs, type Obj } from '../helpers/deploy-files.js';

// ---------------------------------------------------------------------------------------
// Kubernetes

const K8S = 'docker/k8s';
const k8sFiles = readdirSync(join(ROOT, K8S)).filter((f) => /\.ya?ml$/.test(f));
const k8sDocs = new Map<string, Obj[]>(
  k8sFiles.map((f) => {
    const docs = parseAllDocuments(read(`${K8S}/${f}`));
    for (const d of docs) assert.deepEqual(d.errors, [], `${f} parses`);
    return [f, docs.map((d) => obj(d.toJS(), f)).filter((d) => Object.keys(d).length > 0)];
  }),
);
const k8sAll = [...k8sDocs.values()].flat();
const kind = (k: string, name?: string) => k8sAll.filter((d) => d['kind'] === k && (!name || obj(d['metadata'], 'metadata')['name'] === name));

const configMap = kind('ConfigMap')[0]!;
const configMapYaml = String(obj(configMap['data'], 'data')['switchyard.yaml']);
const secret = kind('Secret')[0]!;

interface Container {
  name: string;
  image: string;
  restartPolicy?: string;
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } } }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  startupProbe?: { httpGet?: { path: string; port: string | number } };
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Obj; limits?: Obj };
  securityContext?: Obj;
}
interface PodSpec {
  terminationGracePeriodSeconds?: number;
  securityContext?: Obj;
  containers: Container[];
  initContainers?: Container[];
  volumes?: { name: string; configMap?: { name: string }; emptyDir?: unknown; persistentVolumeClaim?: unknown }[];
}
function podOf(d: Obj): { spec: PodSpec; annotations: Obj; labels: Obj } {
  const tpl = obj(obj(d['spec'], 'spec')['template'], 'template');
  const meta = obj(tpl['metadata'], 'template.metadata');
  return { spec: tpl['spec'] as PodSpec, annotations: (meta['annotations'] as Obj | undefined) ?? {}, labels: obj(meta['labels'], 'labels') };
}
const gatewayContainer = (spec: PodSpec): Container => {
  const c = [...spec.containers, ...(spec.initContainers ?? [])].find((x) => x.name === 'switchyard');
  assert.ok(c, 'a switchyard container');
  return c;
};

function preStopSeconds(c: Container): number {
  const p = c.lifecycle?.preStop;
  if (!p) return 0;
  if (p.sleep) return p.sleep.seconds;
  const cmd = p.exec?.command ?? [];
  assert.equal(cmd[0], 'sleep', 'preStop is a sleep');
  return Number(cmd[1]);
}

describe('Kubernetes manifests', () => {
  test('files: configmap, secret example, deployment, service, sidecar, redis', () => {
    assert.deepEqual(k8sFiles.sort(), ['configmap.yaml', 'deployment.yaml', 'redis.yaml', 'secret.example.yaml', 'service.yaml', 'sidecar.yaml']);
    for (const d of k8sAll) {
      assert.ok(d['apiVersion'] && d['kind'], 'apiVersion and kind');
      assert.ok(obj(d['metadata'], 'metadata')['name'], 'metadata.name');
    }
    assert.equal(kind('Deployment').length, 2);
    assert.equal(kind('Service').length, 2);
  });

  test("the Secret example's REDIS_URL is served by redis.yaml: a Service of that name and port selecting the Redis pods", () => {
    const url = new URL(String(obj(secret['stringData'], 'stringData')['REDIS_URL']));
    const svc = kind('Service', url.hostname)[0];
    assert.ok(svc, `a Service named ${url.hostname}`);
    const s = obj(svc['spec'], 'spec');
    assert.equal(Number(obj(arr(s['ports'], 'ports')[0], 'port')['port']), Number(url.port || 6379));
    const sts = kind('StatefulSet', 'redis')[0]!;
    const { spec, labels } = podOf(sts);
    for (const [k, v] of Object.entries(obj(s['selector'], 'selector'))) assert.equal(labels[k], v, `selector ${k}`);
    const redis = spec.containers[0]!;
    assert.match(redis.image, /^redis:\d+\.\d+\.\d+/, 'a pinned Redis image');
    assert.ok(redis.resources?.limits?.['memory'], 'a memory limit');
    const args = (redis as unknown as { args: string[] }).args.join(' ');
    assert.match(args, /--maxmemory-policy noeviction/, 'Redis never evicts a budget counter');
    assert.equal((redis.securityContext ?? {})['readOnlyRootFilesystem'], true);
  });

  test('memory limits fit the large bodies the ConfigMap lets run at once (docs/deploy.md, "Memory")', () => {
    const server = (parseYaml(configMapYaml) as { server: { body_limit_bytes: number; max_body_bytes_in_flight: number } }).server;
    const cap = server.max_body_bytes_in_flight;
    assert.ok(cap >= server.body_limit_bytes, 'one body at the limit fits the cap');
    // ~125 MiB idle (160 with headroom) plus about 4.4 x each large body while it runs (measured).
    const MiB = 1024 * 1024;
    const need = 160 * MiB + 4.4 * cap;
    const bytes = (q: string) => Number(/^(\d+)(Mi|Gi)$/.exec(q)![1]) * (q.endsWith('Gi') ? 1024 : 1) * MiB;
    for (const name of ['switchyard', 'agent']) {
      const c = gatewayContainer(podOf(kind('Deployment', name)[0]!).spec);
      const limit = bytes(String(c.resources?.limits?.['memory']));
      assert.ok(limit >= need, `${name}: limit ${limit / MiB} MiB >= ${Math.ceil(need / MiB)} MiB`);
    }
  });

  test("the ConfigMap's switchyard.yaml passes the gateway config validation", () => {
    const noKeys = parseTestConfig(configMapYaml, {}, 'configmap.yaml');
    assert.ok(noKeys.models.size > 0);
    const keys = Object.fromEntries(apiKeyVars(configMapYaml).map((v) => [v, 'sk-test']));
    const live = parseTestConfig(configMapYaml, { ...keys, REDIS_URL: 'redis://redis:6379' }, 'configmap.yaml');
    assert.ok(live.upstreamStatus.some((u) => u.mode === 'live'));
  });

  test('the Secret example holds only placeholders, marked as such', () => {
    const text = read(`${K8S}/secret.example.yaml`);
    assert.match(text, /EXAMPLE ONLY/);
    assert.match(text, /PLACEHOLDER/);
    const data = obj(secret['stringData'], 'stringData');
    for (const v of apiKeyVars(configMapYaml)) assert.equal(data[v], '', `${v} is an empty placeholder (upstream off)`);
  });

  for (const [file, name] of [
    ['deployment.yaml', 'switchyard'],
    ['sidecar.yaml', 'agent'],
  ] as const) {
    describe(`${file}: Deployment ${name}`, () => {
      const dep = k8sDocs.get(file)!.find((d) => d['kind'] === 'Deployment')!;
      const { spec, annotations } = podOf(dep);
      const c = gatewayContainer(spec);
      const http = (c.ports ?? []).find((p) => p.name === 'http');
      const resolvePort = (p: string | number | undefined) => (typeof p === 'number' ? p : (c.ports ?? []).find((x) => x.name === p)?.containerPort);
      const env = new Map((c.env ?? []).map((e) => [e.name, e]));

      test('container port 8080 with HOST=0.0.0.0 and PORT matching', () => {
        assert.equal(http?.containerPort, 8080);
        assert.equal(env.get('HOST')?.value, '0.0.0.0');
        assert.equal(Number(env.get('PORT')?.value ?? 8080), http.containerPort);
      });

      test('liveness probes /healthz and readiness /readyz on the container port', () => {
        assert.equal(c.livenessProbe?.httpGet?.path, '/healthz');
        assert.equal(resolvePort(c.livenessProbe?.httpGet?.port), 8080);
        assert.equal(c.readinessProbe?.httpGet?.path, '/readyz');
        assert.equal(resolvePort(c.readinessProbe?.httpGet?.port), 8080);
        if (c.startupProbe) assert.equal(resolvePort(c.startupProbe.httpGet?.port), 8080);
      });

      test('the ledger: DATABASE_URL from the Secret, its spool on a writable volume', () => {
        const db = env.get('DATABASE_URL')?.valueFrom?.secretKeyRef;
        assert.deepEqual(db, { name: 'switchyard-secrets', key: 'DATABASE_URL', optional: true });
        assert.ok('DATABASE_URL' in obj(secret['stringData'], 'stringData'), 'the example Secret has the key');
        const spool = (parseYaml(configMapYaml) as { ledger: { spool_path: string } }).ledger.spool_path;
        const mount = (c.volumeMounts ?? []).find((m) => spool.startsWith(`${m.mountPath}/`));
        assert.ok(mount && !mount.readOnly, `${spool} is on a writable mount (the root filesystem is read-only)`);
        const vol = (spec.volumes ?? []).find((v) => v.name === mount.name);
        assert.ok(vol && (vol.emptyDir !== undefined || vol.persistentVolumeClaim !== undefined), `volume ${mount.name} is an emptyDir or a claim`);
      });

      test('resource requests and limits', () => {
        for (const k of ['requests', 'limits'] as const) {
          assert.ok(c.resources?.[k]?.['cpu'], `${k}.cpu`);
          assert.ok(c.resources?.[k]?.['memory'], `${k}.memory`);
        }
      });

      test('non-root, read-only root filesystem, all capabilities dropped (every container)', () => {
        const pod = spec.securityContext ?? {};
        for (const x of [...spec.containers, ...(spec.initContainers ?? [])]) {
          const sc = x.securityContext ?? {};
          assert.equal(sc['runAsNonRoot'] ?? pod['runAsNonRoot'], true, `${x.name}: runAsNonRoot`);
          const uid = sc['runAsUser'] ?? pod['runAsUser'];
          assert.ok(typeof uid === 'number' && uid > 0, `${x.name}: numeric non-root runAsUser (the image's USER is a name)`);
          assert.equal(sc['readOnlyRootFilesystem'], true, `${x.name}: readOnlyRootFilesystem`);
          assert.equal(sc['allowPrivilegeEscalation'], false, `${x.name}: allowPrivilegeEscalation`);
          assert.deepEqual(obj(sc['capabilities'], 'capabilities')['drop'], ['ALL'], `${x.name}: drop ALL`);
        }
      });

      test('config from the ConfigMap, keys and REDIS_URL from the Secret', () => {
        const mount = (c.volumeMounts ?? []).find((m) => `${m.mountPath}/switchyard.yaml` === env.get('SWITCHYARD_CONFIG')?.value);
        assert.ok(mount, 'SWITCHYARD_CONFIG is in a mounted volume');
        assert.equal(mount.readOnly, true);
        const vol = (spec.volumes ?? []).find((v) => v.name === mount.name);
        assert.equal(vol?.configMap?.name, obj(configMap['metadata'], 'metadata')['name']);
        const secretName = obj(secret['metadata'], 'metadata')['name'];
        const data = obj(secret['stringData'], 'stringData');
        for (const v of [...apiKeyVars(configMapYaml), 'REDIS_URL']) {
          const ref = env.get(v)?.valueFrom?.secretKeyRef;
          assert.ok(ref, `${v} from a secretKeyRef`);
          assert.equal(ref.name, secretName, `${v} from the Secret`);
          assert.equal(ref.key, v);
          assert.ok(ref.key in data, `${v} is in the Secret example`);
          assert.equal(ref.optional, true, `${v}: optional (absent = upstream off / in-memory store)`);
        }
        for (const x of [...spec.containers, ...(spec.initContainers ?? [])]) {
          for (const e of x.env ?? [])
            if (e.valueFrom?.secretKeyRef) assert.ok(e.valueFrom.secretKeyRef.key in data, `${x.name}: ${e.name}'s key is in the Secret`);
        }
      });

      test('Prometheus scrape annotations point at /metrics on the container port', () => {
        assert.equal(annotations['prometheus.io/scrape'], 'true');
        assert.equal(Number(annotations['prometheus.io/port']), http?.containerPort);
        assert.equal(annotations['prometheus.io/path'], '/metrics');
      });

      test('terminationGracePeriodSeconds > preStop sleep + server.drain_ms + shutdown margin', () => {
        const grace = spec.terminationGracePeriodSeconds;
        assert.equal(grace, 30);
        const drain = drainMs(configMapYaml) / 1000;
        const margin = shutdownMarginMs() / 1000;
        const total = preStopSeconds(c) + drain + margin;
        assert.ok(grace! > total, `grace ${grace} s > preStop ${preStopSeconds(c)} s + drain ${drain} s + margin ${margin} s`);
      });
    });
  }

  test('standalone: 2 replicas = store.replicas, preStop sleep, a Service selecting its pods on the http port', () => {
    const dep = kind('Deployment', 'switchyard')[0]!;
    const replicas = obj(dep['spec'], 'spec')['replicas'];
    assert.equal(replicas, 2);
    assert.equal((parseYaml(configMapYaml) as { store: { replicas: number } }).store.replicas, replicas);
    const { spec, labels } = podOf(dep);
    assert.ok(preStopSeconds(gatewayContainer(spec)) > 0, 'preStop sleep before SIGTERM');
    const svc = kind('Service', 'switchyard')[0]!;
    const s = obj(svc['spec'], 'spec');
    const selector = obj(s['selector'], 'selector');
    for (const [k, v] of Object.entries(selector)) assert.equal(labels[k], v, `selector ${k}`);
    const agentLabels = podOf(kind('Deployment', 'agent')[0]!).labels;
    assert.ok(!Object.entries(selector).every(([k, v]) => agentLabels[k] === v), 'the Service does not select the agent pods');
    const port = obj(arr(s['ports'], 'ports')[0], 'port');
    const target = port['targetPort'];
    const c = gatewayContainer(spec);
    assert.equal(typeof target === 'number' ? target : c.ports?.find((p) => p.name === target)?.containerPort, 8080);
  });

  test('sidecar: native sidecar, and the agent talks to http://127.0.0.1:<gateway port>/v1', () => {
    const { spec } = podOf(kind('Deployment', 'agent')[0]!);
    const gwc = gatewayContainer(spec);
    assert.ok((spec.initContainers ?? []).includes(gwc), 'switchyard is an initContainer …');
    assert.equal(gwc.restartPolicy, 'Always', '… with restartPolicy: Always (native sidecar: starts before, stops after the agent)');
    const agent = spec.containers.find((c) => c.name === 'agent');
    assert.ok(agent);
    const base = agent.env?.find((e) => e.name === 'OPENAI_BASE_URL')?.value;
    assert.equal(base, `http://127.0.0.1:${gwc.ports![0]!.containerPort}/v1`);
  });

  test('kubectl parses every manifest (kubectl <cmd> --local, no API server)', (t) => {
    if (!have('kubectl')) {
      t.skip('kubectl is not installed');
      return;
    }
    const kc = isolatedKubeconfig();
    try {
      const r = spawnSync('kubectl', ['annotate', '--local', '-f', join(ROOT, K8S), 'switchyard.test/parsed=true', '-o', 'name'], {
        encoding: 'utf8',
        env: { ...process.env, KUBECONFIG: kc.file },
        timeout: 60_000,
      });
      assert.equal(r.status, 0, r.stderr);
      const expected = k8sAll.map((d) => `${String(d['kind']).toLowerCase()}/${String(obj(d['metadata'], 'metadata')['name'])}`);
      const got = r.stdout
        .trim()
        .split('\n')
        .map((l) => l.replace(/^([a-z]+)\.[a-z.]+\//, '$1/'));
      assert.deepEqual(got.sort(), expected.sort());
    } finally {
      kc.cleanup();
    }
  });

  test('kubectl apply --dry-run=client --validate=false', (t) => {
    if (!have('kubectl')) {
      t.skip('kubectl is not installed');
      return;
    }
    // Never the ambient kubeconfig (nor kubectl's default http://localhost:8080, which may be
    // a gateway): a cluster only when SWITCHYARD_TEST_KUBECONFIG names one.
    const kc = process.env['SWITCHYARD_TEST_KUBECONFIG'] ? { file: process.env['SWITCHYARD_TEST_KUBECONFIG'], cleanup: () => {} } : isolatedKubeconfig();
    try {
      const r = spawnSync('kubectl', ['apply', '--dry-run=client', '--validate=false', '-f', join(ROOT, K8S)], {
        encoding: 'utf8',
        env: { ...process.env, KUBECONFIG: kc.file },
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 60_000,
      });
      if (r.status !== 0 && /connect|dial tcp|server API group list|unable to recognize/i.test(r.stderr)) {
        t.skip('kubectl needs an API server for apply --dry-run=client (set SWITCHYARD_TEST_KUBECONFIG to run it against a cluster)');
        return;
      }
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout.trim().split('\n').length, k8sAll.length, r.stdout);
    } finally {
      kc.cleanup();
    }
  });
});

/** A kubeconfig whose only cluster is unreachable, so kubectl never talks to anything. */
function isolatedKubeconfig(): { file: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-kube-'));
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'config');
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{ name: none, cluster: { server: "https://127.0.0.1:1" } }]',
      'contexts: [{ name: none, context: { cluster: none, user: none } }]',
      'current-context: none',
      // A token, so kubectl does not prompt for a username.
      'users: [{ name: none, user: { token: none } }]',
      '',
    ].join('\n'),
  );
  return { file, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Deletions stuck anywhere, audited on a live sandbox cluster as users meet them:
 * a custom resource held by the finalizer of a controller that is not installed, a
 * ConfigMap held by a custom finalizer, the CRD deleted while its resource is held,
 * an aggregated API server that goes down, and evicted pods piling up. Everything is
 * made with real kubectl (or, for the 200 evicted pods, the API's own status
 * subresource, as the kubelet's eviction manager writes it); what the audit reports
 * is asserted against what was made, and what the API's audit log shows it asked.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KIND_COLOURS } from '../../src/audit/html.js';
import { parseAllDocuments, stringify } from 'yaml';
import { ApiClient } from '../../../sandbox/src/api/client.js';
import { KUBECONFIG, ok, requireKubectl } from '../helpers/kubectl.js';
import { INVENTORY, until } from '../helpers/run.js';
import { ROOT, STATE_DIR, decom, down, ssh, up } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/temp.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Finding { kind: string; subject: string; detail: string; evidence: string[] }
interface Report { hosts: { host: string; findings: Finding[] }[]; cluster: Finding[]; notChecked?: { kinds: string[]; why: string; resources?: Record<string, string> } }

const NEW_KINDS = ['stuck-deleting-object', 'unavailable-apiservice', 'finished-pods'];
const SA_USER = 'system:serviceaccount:decom:decom-audit';
const work = tempDir('decom-stuck-');

/** The audit of node1 alone: what is judged here is the API's, the same whichever hosts are probed. */
function audit(...args: string[]): { code: number; report: Report; stderr: string } {
  const r = decom(['audit', INVENTORY, 'node1', '--output', 'json', ...args]);
  try {
    return { code: r.code, report: JSON.parse(r.stdout) as Report, stderr: r.stderr };
  } catch {
    throw new Error(`decom audit ${args.join(' ')}: exit ${r.code}, no JSON: ${r.stderr}${r.stdout}`);
  }
}
/** The audit's textfile, JUnit XML and HTML of one run (`--output json` on stdout). */
function outputs(...args: string[]): { code: number; prom: string; junit: string; html: string } {
  const [prom, junit, html] = ['decom.prom', 'audit.xml', 'audit.html'].map((f) => join(work, f)) as [string, string, string];
  const r = decom(['audit', INVENTORY, 'node1', '--output', 'json', '--textfile', prom, '--junit', junit, '--html', html, ...args]);
  return { code: r.code, prom: readFileSync(prom, 'utf8'), junit: readFileSync(junit, 'utf8'), html: readFileSync(html, 'utf8') };
}
/** A kind's cell of the cluster row in the HTML heat map: its count, and its colour when it has findings. */
const cell = (html: string, kind: string) => new RegExp(`<td class="cell [a-z]+" data-host="\\(cluster\\)" data-kind="${kind}" data-count="(\\d+)"(?: style="background:(#[0-9a-f]{6})")?>`).exec(html)?.slice(1);
const all = (r: Report) => [...r.hosts.flatMap((h) => h.findings), ...r.cluster];
const ofNewKinds = (r: Report) => all(r).filter((f) => NEW_KINDS.includes(f.kind)).map((f) => `${f.kind} ${f.subject}`).sort();
const finding = (r: Report, subject: string) => all(r).find((f) => f.subject === subject);
const apply = (name: string, text: string) => {
  writeFileSync(join(work, name), text);
  return ok('apply', '-f', join(work, name));
};
/** The API's audit log, a JSON line per request. */
const logLines = () => readFileSync(join(STATE_DIR, 'api', 'audit.log'), 'utf8').split('\n').filter(Boolean);

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`;

describe('deletions stuck anywhere, on a live sandbox cluster', () => {
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '2', '--api']);
  }, 300_000);
  afterAll(() => {
    down();
    rmSync(work, { recursive: true, force: true });
  });

  it('a healthy cluster: no finding of any new kind, even with no margin, and every resource it serves checked', () => {
    const { code, report } = audit('--stuck-after', '0');
    expect(ofNewKinds(report)).toEqual([]);
    expect(report.notChecked).toBeUndefined();
    expect(code).toBe(0);
  });

  it('a custom resource and a ConfigMap held by finalizers no controller removes, and their CRD held by them: each named with its finalizers and what removes them', async () => {
    apply('crd.yaml', CRD);
    await until(() => ok('get', 'crd', 'widgets.example.com', '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}') === 'True', 10_000, 'the CRD Established');
    apply('objects.yaml', `apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default, finalizers: [example.com/protect]}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w2, namespace: default}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: default, finalizers: [example.com/hold]}
data: {k: v}
`);
    ok('delete', 'widget', 'w1', '--wait=false');
    ok('delete', 'configmap', 'held', '--wait=false');
    ok('delete', 'crd', 'widgets.example.com', '--wait=false');
    // The CRD finalizer controller deletes w2 and waits on w1.
    await until(() => ok('get', 'widgets', '-A', '-o', 'name').trim() === 'widget.example.com/w1', 10_000, 'only w1 left of the widgets');

    // Just deleted: within the default --stuck-after (5m), nothing is stuck yet.
    expect(ofNewKinds(audit().report)).toEqual([]);
    const { code, report } = audit('--stuck-after', '0');
    expect(code).toBe(1);
    expect(ofNewKinds(report)).toEqual([
      'stuck-deleting-object configmaps/default/held',
      'stuck-deleting-object customresourcedefinitions.apiextensions.k8s.io/widgets.example.com',
      'stuck-deleting-object widgets.example.com/default/w1',
    ]);
    const w1 = finding(report, 'widgets.example.com/default/w1')!;
    expect(w1.detail).toMatch(/^Widget deleted \d+s ago, held by example\.com\/protect \(no finalizer of it is one decom knows\)$/);
    expect(w1.evidence[0]).toBe("finalizer example.com/protect: removed by a controller of example.com (a guess from the finalizer's domain)");
    const cm = finding(report, 'configmaps/default/held')!;
    expect(cm.detail).toMatch(/^ConfigMap deleted \d+s ago, held by example\.com\/hold/);
    const crd = finding(report, 'customresourcedefinitions.apiextensions.k8s.io/widgets.example.com')!;
    expect(crd.detail).toMatch(/^CustomResourceDefinition deleted \d+s ago, held by customresourcecleanup\.apiextensions\.k8s\.io; 1 custom resource of it still exists \(widgets\.example\.com\)$/);
    expect(crd.evidence).toContain('finalizer customresourcecleanup.apiextensions.k8s.io: removed by the CRD finalizer controller (kube-apiserver), once every custom resource of the definition is deleted');
    expect(crd.evidence).toContain('custom resource default/w1 held by example.com/protect');
    // Pods and namespaces keep their own kinds: nothing here is reported twice.
    expect(all(report).filter((f) => f.kind.startsWith('stuck-terminating-'))).toEqual([]);
    // In every output: the textfile's series, a failing JUnit case, the heat map's cell in the kind's colour.
    const o = outputs('--stuck-after', '0');
    expect(o.code).toBe(1);
    expect(o.prom).toContain('decom_residue{host="(cluster)",kind="stuck-deleting-object"} 3\n');
    expect(o.junit).toContain('<failure message="3 stuck-deleting-object on (cluster)" type="stuck-deleting-object">');
    expect(cell(o.html, 'stuck-deleting-object')).toEqual(['3', KIND_COLOURS['stuck-deleting-object']]);

    // Their finalizers removed (what their controllers would do), the three go, and the audit is clean of them.
    ok('patch', 'widget', 'w1', '--type=merge', '-p', '{"metadata":{"finalizers":null}}');
    ok('patch', 'configmap', 'held', '--type=merge', '-p', '{"metadata":{"finalizers":null}}');
    await until(() => ok('get', 'crd', '-o', 'name').trim() === '', 10_000, 'the CRD gone once its last widget is');
    expect(ofNewKinds(audit('--stuck-after', '0').report)).toEqual([]);
  });

  it('an aggregated API server that goes down: its APIService reported with no namespace Terminating, its group named as not checked; up again, both clear', async () => {
    // metrics-server's APIService, as its manifest registers it (the sandbox serves the group while it is Available).
    apply('apiservice.yaml', `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec: {group: metrics.k8s.io, version: v1beta1, service: {namespace: kube-system, name: metrics-server, port: 443}, groupPriorityMinimum: 100, versionPriority: 100, insecureSkipTLSVerify: true}
`);
    const available = () => ok('get', 'apiservice', 'v1beta1.metrics.k8s.io', '-o', 'jsonpath={.status.conditions[?(@.type=="Available")].status}');
    await until(() => available() === 'True', 10_000, 'the APIService Available');
    const healthy = audit('--stuck-after', '0');
    expect([ofNewKinds(healthy.report), healthy.report.notChecked, healthy.code]).toEqual([[], undefined, 0]);

    ok('-n', 'kube-system', 'create', 'configmap', 'decom-sandbox-faults', '--from-literal=apiServiceUnavailable=v1beta1.metrics.k8s.io');
    await until(() => available() === 'False', 10_000, 'the APIService not Available');
    expect(ok('get', 'namespaces', '-o', 'jsonpath={.items[*].status.phase}').split(' ').every((p) => p === 'Active')).toBe(true);
    const { code, report } = audit();
    expect(ofNewKinds(report)).toEqual(['unavailable-apiservice v1beta1.metrics.k8s.io']);
    expect(finding(report, 'v1beta1.metrics.k8s.io')!.detail).toMatch(/^Available=False \(FailedDiscoveryCheck\) for \d+s: failing or missing response from https:\/\/.*; metrics\.k8s\.io\/v1beta1 cannot be discovered or listed, and a namespace being deleted waits on it$/);
    expect(Object.keys(report.notChecked?.resources ?? {})).toEqual(['metrics.k8s.io/v1beta1']);
    expect(report.notChecked?.kinds).toEqual([]);
    expect(code).toBe(3);
    const text = decom(['audit', INVENTORY, 'node1']).stdout;
    expect(text).toMatch(/^not checked: stuck-deleting-object: metrics\.k8s\.io\/v1beta1: /m);
    const o = outputs();
    expect(o.prom).toContain('decom_residue{host="(cluster)",kind="unavailable-apiservice"} 1\n');
    expect(o.prom).toContain('decom_audit_resources_not_checked 1\n');
    expect(o.junit).toContain('<failure message="1 unavailable-apiservice on (cluster)" type="unavailable-apiservice">');
    expect(o.junit).toMatch(/<system-err>not checked: metrics\.k8s\.io\/v1beta1: /);
    expect(cell(o.html, 'unavailable-apiservice')).toEqual(['1', KIND_COLOURS['unavailable-apiservice']]);
    expect(o.html).toContain('<p class="notchecked">Not checked: stuck-deleting-object (metrics.k8s.io/v1beta1: ');

    ok('-n', 'kube-system', 'delete', 'configmap', 'decom-sandbox-faults');
    await until(() => available() === 'True', 10_000, 'the APIService Available again');
    const after = audit();
    expect([ofNewKinds(after.report), after.report.notChecked, after.code]).toEqual([[], undefined, 0]);
  });

  it('with the shipped ClusterRoles and the CRD granted through the aggregation rule: no list refused, no Secret listed; without the grant, the CRD is not checked', async () => {
    apply('crd.yaml', CRD);
    await until(() => ok('get', 'crd', 'widgets.example.com', '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}') === 'True', 10_000, 'the CRD Established');
    ok('create', 'namespace', 'decom');
    // The manifest's account, ClusterRoles and binding, as kubectl applies them.
    const rbac = parseAllDocuments(readFileSync(join(ROOT, 'deploy', 'audit-cronjob.yaml'), 'utf8')).map((d) => d.toJSON() as Any).filter((d) => ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'].includes(d?.kind));
    apply('rbac.yaml', rbac.map((d) => stringify(d)).join('---\n'));
    await until(() => ok('get', 'clusterrole', 'decom-audit', '-o', 'jsonpath={.rules[*].resources}').includes('configmaps'), 10_000, 'decom-audit aggregating decom-audit-builtin');
    const kubeconfig = join(work, 'sa.kubeconfig');
    writeFileSync(kubeconfig, readFileSync(KUBECONFIG, 'utf8').replace(/token: .*/, `token: ${ok('-n', 'decom', 'create', 'token', 'decom-audit').trim()}`));

    const from = logLines().length;
    const refused = audit('--kubeconfig', kubeconfig);
    expect(refused.report.notChecked?.resources).toEqual({
      'widgets.example.com': `list widgets.example.com: widgets.example.com is forbidden: User "${SA_USER}" cannot list resource "widgets" in API group "example.com" at the cluster scope (HTTP 403)`,
    });
    expect(refused.code).toBe(3);

    // The cluster grants the audit its custom resources: a ClusterRole of its own, labelled for the aggregation.
    apply('grant.yaml', `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: decom-audit-example-com, labels: {decom.io/aggregate-to-audit: "true"}}
rules: [{apiGroups: [example.com], resources: [widgets], verbs: [list]}]
`);
    await until(() => ok('get', 'clusterrole', 'decom-audit', '-o', 'jsonpath={.rules[*].apiGroups}').includes('example.com'), 10_000, 'decom-audit aggregating the grant');
    const between = logLines().length;
    const granted = audit('--kubeconfig', kubeconfig);
    expect([granted.report.notChecked, granted.code]).toEqual([undefined, 0]);

    // What the API's audit log shows the account asked: lists only (and discovery), none refused once granted, never a Secret.
    const asked = (lines: string[]) => lines.map((l) => JSON.parse(l) as Any).filter((e) => e.user === SA_USER);
    const run = asked(logLines().slice(between));
    expect(run.length).toBeGreaterThan(10);
    expect(run.filter((e) => e.responseStatus?.code !== 200).map((e) => `${e.verb} ${e.requestURI} ${e.responseStatus?.code}`)).toEqual([]);
    expect(run.filter((e) => e.verb !== 'list' && e.verb !== 'get').map((e) => e.verb)).toEqual([]);
    expect(asked(logLines().slice(from)).filter((e) => /\/secrets(\?|$)/.test(String(e.requestURI)))).toEqual([]);
    // Every resource listed once in the run, widgets among them.
    const lists = run.filter((e) => e.verb === 'list').map((e) => String(e.requestURI).replace(/\?.*/, ''));
    expect(lists.length).toBe(new Set(lists).size);
    expect(lists).toContain('/apis/example.com/v1/widgets');
    ok('delete', 'crd', 'widgets.example.com');
  });

  it('200 evicted pods on one node in one namespace, with --finished-pods 100: one finding counted per namespace and per node; a finished Job\'s pod is Job history', async () => {
    ok('create', 'namespace', 'batch-team');
    ok('-n', 'batch-team', 'create', 'job', 'backup-1', '--image=registry.k8s.io/busybox:sandbox', '--', 'true');
    await until(() => ok('-n', 'batch-team', 'get', 'job', 'backup-1', '-o', 'jsonpath={.status.succeeded}') === '1', 60_000, 'Job backup-1 succeeded');
    // node2's kubelet stops, so that the pods bound to it are not run; then each pod is evicted as the kubelet's
    // eviction manager records it, through the status subresource.
    ssh('node2', 'systemctl stop kubelet');
    const api = ApiClient.fromKubeconfig(KUBECONFIG);
    ok('create', 'namespace', 'crunch');
    const names = Array.from({ length: 200 }, (_, i) => `worker-${i}`);
    for (let i = 0; i < names.length; i += 20) {
      await Promise.all(names.slice(i, i + 20).map(async (name) => {
        const pod = await api.must('POST', '/api/v1/namespaces/crunch/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { nodeName: 'node2', containers: [{ name: 'main', image: 'registry.k8s.io/busybox:sandbox' }] } });
        await api.must('PUT', `/api/v1/namespaces/crunch/pods/${name}/status`, { ...pod, status: { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 92160Ki. ' } });
      }));
    }
    const { report } = audit('--finished-pods', '100');
    const f = all(report).filter((x) => x.kind === 'finished-pods');
    expect(f.map((x) => x.subject)).toEqual(['finished pods']);
    expect(f[0]!.detail).toBe('201 (Evicted 200, Job history 1) Succeeded and Failed pods kept, more than --finished-pods 100: kube-controller-manager deletes finished pods only past --terminated-pod-gc-threshold (12500 by default)');
    const job = ok('-n', 'batch-team', 'get', 'pods', '-l', 'batch.kubernetes.io/job-name=backup-1', '-o', 'jsonpath={.items[0].spec.nodeName}');
    const perNode = job === 'node2' ? ['node node2: 201 (Evicted 200, Job history 1)'] : ['node node2: 200 (Evicted 200)', `node ${job}: 1 (Job history 1)`];
    expect(f[0]!.evidence).toEqual(['namespace crunch: 200 (Evicted 200)', 'namespace batch-team: 1 (Job history 1)', ...perNode]);
    const o = outputs('--finished-pods', '100');
    expect(o.prom).toContain('decom_residue{host="(cluster)",kind="finished-pods"} 1\n');
    expect(o.junit).toContain('<failure message="1 finished-pods on (cluster)" type="finished-pods">');
    expect(cell(o.html, 'finished-pods')).toEqual(['1', KIND_COLOURS['finished-pods']]);
    // At the default threshold (1000) they are not yet a finding.
    expect(ofNewKinds(audit().report)).toEqual([]);
    expect(cell(outputs().html, 'finished-pods')).toEqual(['0', undefined]);
  });
});

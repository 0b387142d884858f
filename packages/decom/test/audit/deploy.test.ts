/**
 * decom's scheduled hygiene as users deploy it: the image built from deploy/Dockerfile,
 * imported into the nodes' containerd, and deploy/'s manifests applied with real
 * kubectl to the sandbox's cluster, whose controllers and kubelets run them through
 * CRI. Only the image name and the storage are set for the sandbox.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { buildAuditImage, type AuditImage } from '../../../sandbox/src/audit-image.js';
import { SHARED_MOUNT } from '../../../sandbox/src/layout.js';
import { API_INPUTS, AUDIT_KINDS } from '../../src/rules/audit.js';
import { KUBECONFIG, ok, requireKubectl } from '../helpers/kubectl.js';
import { INVENTORY, until } from '../helpers/run.js';
import { ROOT, STATE_DIR, decom, down, nodes, ssh, up } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/temp.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const DEPLOY = join(ROOT, 'deploy');
const SA_USER = 'system:serviceaccount:decom:decom-audit';
/** decom_residue lines of one host, sorted: what the DaemonSet serves and what an SSH audit prints must be equal. */
const residueOf = (text: string, host: string) => text.split('\n').filter((l) => l.startsWith(`decom_residue{host="${host}",`)).sort();
const json = (...args: string[]) => JSON.parse(ok(...args, '-o', 'json')) as Any;
/** Each host's and the cluster row's findings, as kind and subject: what two audits of the same cluster must agree on. */
const findingsOf = (r: Any) => ({
  hosts: (r.hosts as Any[]).map((h) => ({ host: h.host, findings: (h.findings as Any[]).map((f) => `${f.kind} ${f.subject}`).sort() })).sort((a, b) => a.host.localeCompare(b.host)),
  cluster: (r.cluster as Any[]).map((f) => `${f.kind} ${f.subject}`).sort(),
});

describe('the audit as deployed: image, DaemonSet and CronJob run by the sandbox cluster', () => {
  let image: AuditImage;
  let work: string;

  /** A deploy/ manifest with the image the nodes have (as a user sets theirs), then `edit`. */
  function manifest(file: string, edit: (doc: Any) => void = () => {}): Any[] {
    const docs = parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8')).map((d) => d.toJSON() as Any);
    for (const d of docs) {
      for (const c of [d.spec?.template?.spec, d.spec?.jobTemplate?.spec?.template?.spec].flatMap((s) => s?.containers ?? [])) c.image = image.ref;
      edit(d);
    }
    return docs;
  }
  const apply = (name: string, docs: Any[]) => {
    const file = join(work, name);
    writeFileSync(file, docs.map((d) => stringify(d)).join('---\n'));
    return ok('apply', '-f', file);
  };
  const jobDone = (name: string) => () => (json('-n', 'decom', 'get', 'job', name).status?.conditions ?? []).some((c: Any) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True');

  beforeAll(async () => {
    requireKubectl();
    work = tempDir('decom-deploy-');
    image = await buildAuditImage({ cache: true });
    // node2, the first worker, carries the residue of a runtime that lost its state.
    up(['--nodes', '3', '--scenario', 'runtime-lost', '--node-monitor-grace-period', '15']);
    for (const n of nodes()) ssh(n.name, `ctr -n k8s.io images import ${image.archive} >/dev/null`);
    ok('create', 'namespace', 'decom');
  }, 600_000);
  afterAll(() => {
    down();
    rmSync(work, { recursive: true, force: true });
  });

  it('the image imported into every node runs its decom', () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    for (const n of nodes()) expect(ssh(n.name, 'ctr -n k8s.io images ls -q')).toContain(image.ref);
    expect(ssh('node1', `ctr -n k8s.io run --rm ${image.ref} decom-version decom --version`).trim()).toBe(version);
  });

  it("the DaemonSet's pod on every node serves metrics equal to an SSH audit of that node", async () => {
    apply('daemonset.yaml', manifest('audit-daemonset.yaml'));
    const pods = () => json('-n', 'decom', 'get', 'pods', '-l', 'app.kubernetes.io/name=decom-node-audit').items as Any[];
    await until(() => pods().length === 3 && pods().every((p) => p.status?.phase === 'Running'), 60_000, 'a Running decom-node-audit pod on each of the 3 nodes');
    expect(pods().map((p) => p.spec.nodeName).sort()).toEqual(['node1', 'node2', 'node3']);
    // automountServiceAccountToken: false — no token in the probe's pods.
    expect(pods().flatMap((p) => (p.spec.volumes as Any[]).map((v) => v.name)).filter((n) => n.startsWith('kube-api-access-'))).toEqual([]);
    // Each pod's container is the image's decom, run by containerd on its node.
    for (const p of pods()) {
      const id = (p.status.containerStatuses[0].containerID as string).replace('containerd://', '');
      expect(ssh(p.spec.nodeName, `ctr -n k8s.io c info ${id}`)).toContain(`"Image": "${image.ref}"`);
    }
    for (const n of nodes()) {
      // Scraped as Prometheus scrapes the pod: at its IP, the node's (hostNetwork).
      let served = '';
      await until(() => {
        served = spawnSync('curl', ['-sf', '--max-time', '5', `http://${n.addr}:9847/metrics`], { encoding: 'utf8' }).stdout ?? '';
        return residueOf(served, n.name).length > 0;
      }, 60_000, `decom_residue on ${n.name}:9847`);
      const viaSsh = decom(['audit', INVENTORY, n.name, '--no-api', '--output', 'prometheus']);
      expect(residueOf(served, n.name)).toEqual(residueOf(viaSsh.stdout, n.name));
      const found = residueOf(served, n.name).filter((l) => !l.endsWith(' 0')).map((l) => /kind="([^"]+)"/.exec(l)?.[1]);
      if (n.name === 'node2') expect(found.sort()).toEqual(['orphan-ipam-lease', 'orphan-netns', 'orphan-pod-cgroup', 'orphan-pod-dir', 'orphan-veth']);
      else expect(found).toEqual([]);
    }
    // kubectl logs shows what the probe printed.
    expect(ok('-n', 'decom', 'logs', (pods()[0] as Any).metadata.name)).toMatch(/serving the audit's metrics at http:\/\/0\.0\.0\.0:9847\/metrics/);
  });

  it('kubectl create job --from=cronjob: the shards complete and the merged report equals one SSH audit of the whole sandbox', async () => {
    // The storage set for the sandbox: a ReadWriteMany volume on the dir every node shares.
    apply('pv.yaml', [{ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'decom-reports' }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteMany'], hostPath: { path: SHARED_MOUNT, type: 'Directory' } } }]);
    // The inventory as the pod sees it: the key where the Secret is mounted, the API from the pod's own account.
    const inventory = readFileSync(INVENTORY, 'utf8').replace(/ansible_ssh_private_key_file: .*/, 'ansible_ssh_private_key_file: /etc/decom/ssh/id_ed25519').replace(/^ +(ansible_ssh_common_args|decom_kubeconfig):.*\n/gm, '');
    writeFileSync(join(work, 'hosts.yaml'), inventory);
    // The set-up commands of docs/audit-outputs.md, as a user types them.
    ok('-n', 'decom', 'create', 'configmap', 'decom-inventory', `--from-file=hosts.yaml=${join(work, 'hosts.yaml')}`);
    ok('-n', 'decom', 'create', 'secret', 'generic', 'decom-ssh', `--from-file=id_ed25519=${join(STATE_DIR, 'id_ed25519')}`, `--from-file=known_hosts=${join(STATE_DIR, 'known_hosts')}`);
    apply('cronjob.yaml', manifest('audit-cronjob.yaml'));
    await until(() => json('-n', 'decom', 'get', 'pvc', 'decom-reports').status?.phase === 'Bound', 10_000, 'the claim bound to the sandbox volume');
    ok('-n', 'decom', 'create', 'job', '--from=cronjob/decom-audit', 'audit-1');
    await until(jobDone('audit-1'), 120_000, 'Job audit-1 finished');

    const job = json('-n', 'decom', 'get', 'job', 'audit-1');
    expect(job.status).toMatchObject({ succeeded: 3, completedIndexes: '0-2' });
    expect(job.status.conditions.map((c: Any) => c.type)).toEqual(['SuccessCriteriaMet', 'Complete']);
    const shards = json('-n', 'decom', 'get', 'pods', '-l', 'batch.kubernetes.io/job-name=audit-1').items as Any[];
    expect(shards.map((p) => p.metadata.annotations['batch.kubernetes.io/job-completion-index']).sort()).toEqual(['0', '1', '2']);
    expect(shards.every((p) => p.status.phase === 'Succeeded')).toBe(true);
    // Each shard ran as the Job controller and the ServiceAccount admission make a pod: its index from the
    // annotation, and the account's token with the API's CA mounted where client libraries look.
    for (const p of shards) {
      expect(p.spec.containers[0].env).toContainEqual({ name: 'JOB_COMPLETION_INDEX', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } });
      expect(p.spec.containers[0].volumeMounts).toContainEqual(expect.objectContaining({ mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }));
    }

    const merged = JSON.parse(readFileSync(join(STATE_DIR, 'shared', 'latest.json'), 'utf8')) as Any;
    expect((merged.hosts as Any[]).map((h) => h.host).sort()).toEqual(['node1', 'node2', 'node3']);
    expect(merged.notChecked).toBeUndefined();
    const viaSsh = decom(['audit', INVENTORY, '--output', 'json']);
    expect(findingsOf(merged)).toEqual(findingsOf(JSON.parse(viaSsh.stdout)));
    // node2's are the lost runtime's traces, as its DaemonSet pod counted them.
    const served = spawnSync('curl', ['-sf', '--max-time', '5', `http://${nodes().find((n) => n.name === 'node2')?.addr}:9847/metrics`], { encoding: 'utf8' }).stdout ?? '';
    const counted = residueOf(served, 'node2').reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    expect(counted).toBeGreaterThan(0);
    expect(findingsOf(merged).hosts.find((h) => h.host === 'node2')?.findings).toHaveLength(counted);

    // One set of lists per shard, each made by decom with the pod's ServiceAccount token: every resource once a
    // shard, the seven read in full among them, never a Secret.
    const asked = readFileSync(join(STATE_DIR, 'api', 'audit.log'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Any).filter((e) => e.user === SA_USER);
    expect(asked.every((e) => /^decom\//.test(e.userAgent) && (e.verb === 'list' || e.verb === 'get'))).toBe(true);
    const perResource = new Map<string, number>();
    for (const e of asked.filter((x) => x.verb === 'list')) perResource.set(e.requestURI.replace(/\?.*/, ''), (perResource.get(e.requestURI.replace(/\?.*/, '')) ?? 0) + 1);
    expect(Object.fromEntries(perResource)).toMatchObject({
      '/api/v1/pods': 3, '/api/v1/nodes': 3, '/api/v1/namespaces': 3, '/apis/storage.k8s.io/v1/volumeattachments': 3, '/apis/coordination.k8s.io/v1/leases': 3,
      '/apis/apiregistration.k8s.io/v1/apiservices': 3, '/api/v1/persistentvolumes': 3, '/api/v1/configmaps': 3,
    });
    expect([...perResource.values()].every((n) => n === 3)).toBe(true);
    expect([...perResource.keys()].filter((u) => u.endsWith('/secrets'))).toEqual([]);
  });

  it("a shard run with --ssh openssh, the image's ssh as user 65532 on its read-only root, reports what the same shard found over ssh2", async () => {
    // The CronJob's own template (its user, read-only root and /tmp emptyDir), one pod: the shard that holds node2 and its
    // residue, as audit-1 above ran it over ssh2, with --ssh openssh. A sampler reads /proc every 50 ms for the transport's
    // ssh processes (not ssh -G, which decom runs over ssh2 too).
    const template = json('-n', 'decom', 'get', 'cronjob', 'decom-audit').spec.jobTemplate.spec;
    const viaSsh2 = JSON.parse(readFileSync(join(STATE_DIR, 'shared', 'runs', 'audit-1', 'shard-1.json'), 'utf8')) as Any;
    template.template.spec.containers[0].args = [
      [
        'out=/reports/runs/openssh-1; mkdir -p "$out" || exit 2',
        'echo "uid $(id -u), root $(touch /.w 2>/dev/null && echo writable || echo read-only), TMPDIR ${TMPDIR:-unset}"',
        `( while :; do for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <"$f"; echo; done | grep -E '^(/usr/bin/)?ssh[: ]' | grep -v '^[^ ]* -G '; sleep 0.05; done ) >/tmp/seen 2>/dev/null &`,
        'decom audit /etc/decom/inventory/hosts.yaml --shard 1/3 --ssh openssh --known-hosts /etc/decom/ssh/known_hosts --output json > "$out/shard-1.json"',
        'rc=$?; kill $!',
        'echo "decom exit $rc, ssh processes seen: $(sort -u /tmp/seen | grep -c .)"',
        'case $rc in 0|1|3) exit 0 ;; *) exit $rc ;; esac',
      ].join('\n'),
    ];
    apply('openssh.yaml', [{ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'openssh-1', namespace: 'decom' }, spec: { ...template, completions: 1, parallelism: 1, backoffLimit: 0 } }]);
    await until(jobDone('openssh-1'), 60_000, 'Job openssh-1 finished');
    const log = ok('-n', 'decom', 'logs', 'job/openssh-1');
    expect(json('-n', 'decom', 'get', 'job', 'openssh-1').status.succeeded, log).toBe(1);
    expect(log).toContain('uid 65532, root read-only, TMPDIR unset');
    expect(log, log).toMatch(/^decom exit 1, ssh processes seen: [1-9]\d*$/m);

    const viaOpenssh = JSON.parse(readFileSync(join(STATE_DIR, 'shared', 'runs', 'openssh-1', 'shard-1.json'), 'utf8')) as Any;
    expect(viaOpenssh.shard).toBe('1/3');
    expect((viaOpenssh.hosts as Any[]).map((h) => [h.host, h.reachable, h.error])).toEqual([['node2', true, undefined]]);
    expect(findingsOf(viaOpenssh).hosts[0]?.findings.length).toBeGreaterThan(0);
    expect(findingsOf(viaOpenssh)).toEqual(findingsOf(viaSsh2));
  });

  it("the ClusterRole lets the audit read and never write: a fix is refused by the API, in one line", async () => {
    // A pod stuck Terminating on node3, whose kubelet is gone and whose containers died with it.
    ok('run', 'lost', '--image=registry.k8s.io/busybox:sandbox', '--restart=Never', '--overrides={"spec":{"nodeName":"node3"}}', '--', 'sleep', '3600');
    await until(() => json('get', 'pod', 'lost').status?.phase === 'Running', 30_000, 'pod lost Running on node3');
    ssh('node3', 'systemctl stop kubelet');
    ok('delete', 'pod', 'lost', '--grace-period=1', '--wait=false');
    ssh('node3', `for id in $(ctr -n k8s.io c ls -q 'labels."io.kubernetes.pod.name"==lost'); do ctr -n k8s.io t kill -s SIGKILL "$id"; done`);
    await until(() => json('get', 'node', 'node3').status.conditions.some((c: Any) => c.type === 'Ready' && c.status !== 'True'), 60_000, 'node3 NotReady');

    // A Job from the CronJob's own template, running the fix.
    const template = json('-n', 'decom', 'get', 'cronjob', 'decom-audit').spec.jobTemplate.spec;
    template.template.spec.containers[0].args = ['exec decom audit /etc/decom/inventory/hosts.yaml --known-hosts /etc/decom/ssh/known_hosts --fix stuck-terminating-pod --yes --stuck-after 1s --state-dir /reports/fix-journal'];
    template.template.spec.nodeSelector = { 'kubernetes.io/hostname': 'node2' };
    apply('fix.yaml', [{ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'fix-1', namespace: 'decom' }, spec: { ...template, completions: 1, parallelism: 1, backoffLimit: 0 } }]);
    await until(jobDone('fix-1'), 60_000, 'Job fix-1 finished');
    const log = ok('-n', 'decom', 'logs', 'job/fix-1');
    expect(log).toContain('force-delete pod default/lost');
    const refused = log.split('\n').filter((l) => l.includes('FAILED'));
    expect(refused).toEqual([`node3: FAILED stuck-terminating-pod default/lost: pods "lost" is forbidden: User "${SA_USER}" cannot delete resource "pods" in API group "" in the namespace "default" (HTTP 403)`]);
    expect(json('get', 'pod', 'lost').metadata.deletionTimestamp).toBeTruthy(); // still there: nothing was written
  });

  it("removing any one rule of the audit's ClusterRoles leaves what it grants unchecked, named in the report", async () => {
    // A namespace held Terminating: the namespace kind reads the Pods and APIServices too.
    ok('create', 'namespace', 'retiring');
    apply('held.yaml', [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'held', namespace: 'retiring', finalizers: ['example.com/hold'] } }]);
    ok('delete', 'namespace', 'retiring', '--wait=false');
    // The account's token in a kubeconfig of its own, as the pod would use it.
    const token = ok('-n', 'decom', 'create', 'token', 'decom-audit').trim();
    const admin = readFileSync(KUBECONFIG, 'utf8');
    const kubeconfig = join(work, 'sa.kubeconfig');
    writeFileSync(kubeconfig, admin.replace(/token: .*/, `token: ${token}`));
    const builtin = manifest('audit-cronjob.yaml').find((d) => d.kind === 'ClusterRole' && d.metadata.name === 'decom-audit-builtin') as Any;
    // node1 alone: what is asserted is the API's side, the same whichever hosts are probed.
    const audit = () => JSON.parse(decom(['audit', INVENTORY, 'node1', '--kubeconfig', kubeconfig, '--stuck-after', '1s', '--output', 'json']).stdout) as Any;
    expect(audit().notChecked).toBeUndefined();
    // What the sandbox serves that can be listed and deleted, as kubectl names it; the audit lists these.
    const served = new Set(ok('api-resources', '--verbs=list,delete', '-o', 'name').split('\n').filter(Boolean));
    const full = ['pods', 'nodes', 'namespaces', 'volumeattachments.storage.k8s.io', 'leases.coordination.k8s.io', 'apiservices.apiregistration.k8s.io'];
    const aggregated = () => JSON.stringify(json('get', 'clusterrole', 'decom-audit').rules ?? []);
    for (const [i, rule] of (builtin.rules as Any[]).entries()) {
      const names = (rule.resources as string[]).map((r) => (rule.apiGroups[0] ? `${r}.${rule.apiGroups[0]}` : r)).filter((n) => served.has(n));
      if (!names.length) continue; // a group the sandbox does not serve: nothing to lose
      const without = { ...builtin, rules: (builtin.rules as Any[]).filter((_, j) => j !== i) };
      apply('role.yaml', [without]);
      await until(() => aggregated() === JSON.stringify(without.rules), 10_000, `decom-audit without rule ${i}`);
      const r = audit();
      // Exactly the kinds that read a full list the role no longer allows, each refusal in the API's words.
      const lost = AUDIT_KINDS.filter((k) => ((API_INPUTS as Record<string, readonly string[]>)[k] ?? []).some((l) => names.includes(full.find((f) => f.split('.')[0] === l) ?? '')));
      expect(r.notChecked?.kinds ?? [], `without ${names.join(', ')}`).toEqual(lost);
      // And every resource of the rule named on its own (its stuck objects unseen), but pods and namespaces, whose kinds are their own.
      const others = names.filter((n) => n !== 'pods' && n !== 'namespaces');
      expect(Object.keys(r.notChecked?.resources ?? {}).sort(), `without ${names.join(', ')}`).toEqual(others.sort());
      for (const n of names) expect(JSON.stringify(r.notChecked)).toContain(`cannot list resource \\"${n.split('.')[0]}\\"`);
    }
    apply('role.yaml', [builtin]);
  });
});


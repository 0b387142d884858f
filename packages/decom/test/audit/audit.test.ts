// `decom audit` on the sandbox scenarios: what it reports is asserted against what
// was planted; what `--fix` changes is asserted by snapshots of the nodes (over SSH)
// and of the API (real kubectl), taken before and after.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseJunit } from 'junit2json';
import { chromium } from 'playwright-core';
import { PNG } from 'pngjs';
import { parse as parseYaml } from 'yaml';
import { CLI, decom, down, ROOT, ssh, STATE_DIR, up, addrOf, subnetAddr } from '../helpers/sandbox.js';
import type { RunReport } from '../helpers/run.js';
import { probeBody, scriptPrelude } from '../../src/probes/script.js';
import { ok, requireKubectl, sleep } from '../helpers/kubectl.js';
import { shardOf } from '../../src/audit/audit.js';
import { KIND_COLOURS, CLEAN_COLOUR } from '../../src/audit/html.js';
import { AUDIT_KINDS } from '../../src/rules/audit.js';
import { tempDir } from '../helpers/temp.js';

const INVENTORY = join(STATE_DIR, 'hosts.yaml');
const tmp = tempDir('decom-audit-');
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Finding { kind: string; subject: string; detail: string; evidence: string[]; target: Record<string, unknown> }
interface Report { hosts: { host: string; reachable: boolean; findings: Finding[] }[]; cluster: Finding[]; notChecked?: { kinds: string[]; why: string } }

const audit = (...args: string[]) => decom(['audit', INVENTORY, ...args]);
function auditJson(...args: string[]): { code: number; report: Report; stderr: string } {
  const r = audit('--output', 'json', ...args);
  try {
    return { code: r.code, report: JSON.parse(r.stdout) as Report, stderr: r.stderr };
  } catch {
    throw new Error(`decom audit ${args.join(' ')}: exit ${r.code}, no JSON: ${r.stderr}${r.stdout}`);
  }
}
/** "host kind subject" of every finding, sorted: what a test compares. */
const found = (r: Report) => [...r.hosts.flatMap((h) => h.findings.map((f) => `${h.host} ${f.kind} ${f.subject}`)), ...r.cluster.map((f) => `(cluster) ${f.kind} ${f.subject}`)].sort();
const kindsOf = (r: Report) => [...new Set(found(r).map((l) => l.split(' ')[1]))].sort();

/** What a node holds of the pod traces and the non-Kubernetes collateral (over SSH, not through decom). */
const nodeSnapshot = (node: string) =>
  ssh(
    node,
    `echo "## tasks"; ctr -n k8s.io t ls | tail -n +2 | awk '{print $1, $3}' | sort
echo "## netns"; ip netns list | cut -d' ' -f1 | sort
echo "## links"; ip -o link | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
echo "## mounts"; awk '{print $5}' /proc/self/mountinfo | grep -E '^/(var/lib/kubelet|srv)/' | sort
echo "## pod dirs"; ls /var/lib/kubelet/pods 2>/dev/null | sort
echo "## cgroups"; find /sys/fs/cgroup/pids/kubepods* -type d 2>/dev/null | sed 's|^/sys/fs/cgroup/pids||' | sort
echo "## slices"; systemctl list-units --all --plain --no-legend 'kubepods*' 2>/dev/null | cut -d' ' -f1 | sort
echo "## leases"; ls /var/lib/cni/networks/cbr0 2>/dev/null | sort
echo "## user data"; cat /srv/appdata/important.db`,
  );
function section(snap: string, name: string): string[] {
  const out: string[] = [];
  let inside = false;
  for (const l of snap.split('\n')) {
    if (l.startsWith('## ')) inside = l === `## ${name}`;
    else if (inside && l) out.push(l);
  }
  return out;
}
/** The API's objects (names and UIDs), as kubectl lists them. */
const apiSnapshot = () => ok('get', 'pods,namespaces,nodes,volumeattachments', '-A', '-o', 'custom-columns=KIND:.kind,NS:.metadata.namespace,NAME:.metadata.name,UID:.metadata.uid,DELETING:.metadata.deletionTimestamp', '--sort-by=.metadata.uid');

/** The list requests the sandbox API served to decom (User-Agent decom/…), by resource, from its apiserver_request_total. */
function decomLists(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of ok('get', '--raw', '/metrics').matchAll(/^apiserver_request_total\{verb="LIST",[^}]*resource="([^"]+)",[^}]*client="decom"\} (\d+)$/gm)) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
  return out;
}

const COLLATERAL = /app-vpn|app-veth0|\/srv\/appdata|app-filter|app-ca/;

describe('--shard: an Indexed Job shares the inventory out', () => {
  it('splits 10 hosts into 3 shards that together hold each host exactly once, whatever the inventory order', () => {
    const hosts = Array.from({ length: 10 }, (_, i) => ({ name: `node${(i * 7) % 10}` }));
    const shards = [0, 1, 2].map((i) => shardOf(hosts, `${i}/3`).hosts.map((h) => h.name));
    expect(shards.map((s) => s.length)).toEqual([4, 3, 3]);
    expect(shards.flat().sort()).toEqual(hosts.map((h) => h.name).sort());
    expect(shardOf([...hosts].reverse(), '1/3').hosts.map((h) => h.name)).toEqual(shards[1]);
    expect(() => shardOf(hosts, '3/3')).toThrow(/--shard "3\/3": expected I\/N with 0 <= I < N/);
    expect(() => shardOf(hosts, 'one/3')).toThrow(/--shard/);
  });
});

describe('bad input is refused with the flag named, before any host is touched', () => {
  const refused = (args: string[], message: RegExp) => {
    const r = decom(['audit', join(tmp, 'nowhere.yaml'), ...args]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
  };
  it('names the flag and says what would be accepted', () => {
    refused(['--fix', 'phantom-pods'], /--fix phantom-pods: no such kind; kinds with a remedy: phantom-pod, orphan-pod-cgroup/);
    refused(['--fix', 'stale-node'], /--fix stale-node: decom has no safe remedy for it/);
    refused(['--fix', 'stuck-terminating-namespace'], /a namespace is finalized only when named: --force-finalize NAMESPACE/);
    refused(['--stale-after', 'an hour'], /--stale-after "an hour": expected a duration/);
    refused(['--fix', 'orphan-netns', '--from', join(tmp, 'no-report.json')], /--from .*no-report\.json: no such file/);
    refused(['--check'], /--from, --check and --yes go with --fix or --force-finalize/);
    refused(['--no-api', '--kubeconfig', '/dev/null'], /--no-api contradicts --kubeconfig/);
    refused(['--output', 'xml'], /argument 'xml' is invalid/);
  });
});

describe('--print-systemd-timer: the audit on one machine, on a schedule', () => {
  it('prints a service and timer pair that systemd-analyze accepts, running the same audit with the textfile written', () => {
    const r = decom(['audit', join(ROOT, 'inventory', 'kubespray', 'hosts.yaml'), '--no-api', '--stale-after', '2h', '--print-systemd-timer', '--on-calendar', '*:0/15']);
    expect(r.code, r.stderr).toBe(0);
    const units = [...r.stdout.matchAll(/^# --- (\S+) ---\n([\s\S]*?)(?=^# --- |(?![\s\S]))/gm)].map((m) => ({ path: m[1]!, text: m[2]! }));
    expect(units.map((u) => u.path)).toEqual(['/etc/systemd/system/decom-audit.service', '/etc/systemd/system/decom-audit.timer']);
    const dir = mkdtempSync(join(tmp, 'units-'));
    for (const u of units) writeFileSync(join(dir, u.path.split('/').pop()!), u.text);
    const verify = spawnSync('systemd-analyze', ['verify', join(dir, 'decom-audit.service'), join(dir, 'decom-audit.timer')], { encoding: 'utf8' });
    expect(verify.status, verify.stderr).toBe(0);
    expect(units[0]!.text).toContain(`ExecStart=${process.execPath} ${CLI} audit ${join(ROOT, 'inventory', 'kubespray', 'hosts.yaml')} --no-api --stale-after 2h --textfile /var/lib/prometheus/node-exporter/decom.prom\n`);
    expect(units[0]!.text).toContain('SuccessExitStatus=1\n');
    expect(units[1]!.text).toContain('OnCalendar=*:0/15\n');
  });

  it('runs the command line as typed, in the directory it was typed in: -i and relative paths mean what they meant', () => {
    const here = join(ROOT, 'inventory', 'kubespray');
    const r = decom(['audit', '--no-api', '-i', 'hosts.yaml', '-l', 'node1', '--print-systemd-timer'], { cwd: here });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`\nWorkingDirectory=${here}\nExecStart=${process.execPath} ${CLI} audit --no-api -i hosts.yaml -l node1 --textfile /var/lib/prometheus/node-exporter/decom.prom\n`);
    // A timer has no terminal: what would ask on one is refused.
    const asks = decom(['audit', 'hosts.yaml', '-K', '--print-systemd-timer'], { cwd: here });
    expect([asks.code, asks.stderr]).toEqual([2, 'decom: --print-systemd-timer: a timer has no terminal to ask on: drop -k, -K and --ask-vault-pass, give the passwords in files\n']);
  });
});

describe('etcd-restore-phantoms: phantom pods found, reported in every format, and removed only while the API still does not know them', () => {
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--scenario', 'etcd-restore-phantoms']);
  });
  afterAll(() => down());

  it('reports exactly the two phantom pods on node2, with their containers and processes, and nothing on the healthy nodes', () => {
    const before = decomLists();
    const { code, report } = auditJson();
    // One set of lists per run, whatever the number of nodes (the API's own count of decom's requests).
    const after = decomLists();
    const made = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, n]) => n));
    // Each resource listed once: the seven read in full, every other one metadata-only; never a Secret.
    expect(made).toMatchObject({ pods: 1, nodes: 1, namespaces: 1, volumeattachments: 1, persistentvolumes: 1, leases: 1, apiservices: 1, configmaps: 1, customresourcedefinitions: 1 });
    expect(Object.values(made).every((n) => n === 1)).toBe(true);
    expect(made.secrets).toBeUndefined();
    expect(code).toBe(1);
    expect(found(report)).toEqual(['node2 phantom-pod default/metrics-agent-x8w2p', 'node2 phantom-pod default/orders-5f7b8c9d4-kq2xz']);
    const orders = report.hosts.find((h) => h.host === 'node2')!.findings.find((f) => f.subject.startsWith('default/orders'))!;
    expect(orders.detail).toMatch(/^pod [0-9a-f-]{36} runs on the node \(2 of 2 containers running\) but the API has no such pod$/);
    expect(orders.evidence.filter((e) => /^(sandbox|container) /.test(e))).toHaveLength(2);
    expect(orders.evidence.some((e) => /^process \d+ \/bin\/sleep/.test(e))).toBe(true);
    expect(orders.evidence.some((e) => /^netns cni-/.test(e))).toBe(true); // on the pod network: its netns is the phantom's
    expect(JSON.stringify(report)).not.toMatch(COLLATERAL);
    expect(report.notChecked).toBeUndefined();
  });

  it('writes a Prometheus textfile that promtool accepts, atomically, with a series per host and kind', () => {
    const file = join(tmp, 'decom.prom');
    const r = audit('--textfile', file);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^HOST\s+phantom\s+pod-dir\s+cgroup\s+netns\s+veth\s+lease\s+term-pod\s+term-ns\s+node\s+etcd\s+vol-att\s+local-pv\s+stuck-obj\s+apisvc\s+finished$/m);
    expect(r.stdout).toMatch(/^node2\s+2\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0$/m);
    const text = readFileSync(file, 'utf8');
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    expect(text).toContain('decom_residue{host="node2",kind="phantom-pod"} 2\n');
    expect(text).toContain('decom_residue{host="node1",kind="phantom-pod"} 0\n');
    expect(text.match(/^decom_residue\{/gm)).toHaveLength(4 * AUDIT_KINDS.length); // 3 hosts and the cluster's row
    expect(text).toContain('decom_audit_host_reachable{host="node3"} 1\n');
    const ts = Number(/^decom_audit_last_run_timestamp_seconds (\S+)$/m.exec(text)?.[1]);
    expect(Math.abs(ts - Date.now() / 1000)).toBeLessThan(60);
    expect(readdirSync(tmp).filter((f) => f.endsWith('.tmp'))).toEqual([]); // the temporary file was renamed, not left
  });

  it('writes JUnit XML a JUnit reader reads: a test case per host and kind, the phantoms failing node2', async () => {
    const file = join(tmp, 'audit.xml');
    expect(audit('--junit', file, '--output', 'json').code).toBe(1);
    const doc = (await parseJunit(readFileSync(file, 'utf8'))) as { testsuite: { name: string; tests: number; failures: number; testcase: { name: string; failure?: { message: string }[] }[] }[] };
    expect(doc.testsuite.map((s) => s.name)).toEqual(['node1', 'node2', 'node3', '(cluster)']);
    const node2 = doc.testsuite.find((s) => s.name === 'node2')!;
    expect(node2.tests).toBe(AUDIT_KINDS.length);
    expect(node2.failures).toBe(1);
    expect(node2.testcase.filter((c) => c.failure).map((c) => c.name)).toEqual(['phantom-pod']);
    expect(node2.testcase.find((c) => c.name === 'phantom-pod')!.failure![0]!.message).toBe('2 phantom-pod on node2');
    expect(doc.testsuite.find((s) => s.name === 'node1')!.failures).toBe(0);
  });

  it('writes a self-contained HTML heat map: a cell per host and kind, the phantom cell in its colour in headless Chromium', async () => {
    const file = join(tmp, 'audit.html');
    expect(audit('--html', file, '--output', 'json').code).toBe(1);
    const html = readFileSync(file, 'utf8');
    expect(html).not.toMatch(/<script|<link|src=|url\(|@import/i); // nothing fetched at view time
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
      const requests: string[] = [];
      page.on('request', (r) => requests.push(r.url()));
      await page.goto(`file://${file}`);
      expect(await page.locator('td.cell').count()).toBe(4 * AUDIT_KINDS.length);
      expect(await page.locator('td.cell[data-host="node2"][data-kind="phantom-pod"]').getAttribute('data-count')).toBe('2');
      const png = PNG.sync.read(await page.screenshot());
      const pixel = async (host: string, kind: string) => {
        const box = (await page.locator(`td.cell[data-host="${host}"][data-kind="${kind}"]`).boundingBox())!;
        const i = (Math.round(box.y + 3) * png.width + Math.round(box.x + 3)) * 4; // a corner: the count's text is in the middle
        return `#${[png.data[i], png.data[i + 1], png.data[i + 2]].map((v) => v!.toString(16).padStart(2, '0')).join('')}`;
      };
      expect(await pixel('node2', 'phantom-pod')).toBe(KIND_COLOURS['phantom-pod']);
      expect(await pixel('node1', 'phantom-pod')).toBe(CLEAN_COLOUR);
      // The drill-down: the cell links to the findings with their evidence.
      await page.locator('td.cell[data-host="node2"][data-kind="phantom-pod"] a').click();
      expect((await page.locator('section#f-node2-phantom-pod > ul > li > b').allTextContents()).sort()).toEqual(['default/metrics-agent-x8w2p', 'default/orders-5f7b8c9d4-kq2xz']);
      expect(requests.filter((u) => !u.startsWith('file://'))).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('merges the shards of an Indexed Job into the report one unsharded audit gives', () => {
    const whole = auditJson().report;
    const files = ['0/2', '1/2'].map((sh, i) => {
      const file = join(tmp, `shard-${i}.json`);
      const r = audit('--shard', sh, '--output', 'json');
      expect(r.code).toBeLessThanOrEqual(1);
      writeFileSync(file, r.stdout);
      return file;
    });
    const merged = decom(['audit-report', '--expect', '2', '--output', 'json', ...files]);
    expect(merged.code, merged.stderr).toBe(1);
    expect(found(JSON.parse(merged.stdout) as Report)).toEqual(found(whole));
    expect((JSON.parse(merged.stdout) as Report).hosts.map((h) => h.host)).toEqual(['node1', 'node2', 'node3']);
    const short = decom(['audit-report', '--expect', '3', ...files]);
    expect([short.code, short.stderr.trim()]).toEqual([2, `decom: --expect 3: 2 reports given (${files.join(', ')})`]);
    const twice = decom(['audit-report', files[0]!, files[0]!]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/host node\d is in .*shard-0\.json too: these reports are not the shards of one run/);
  });

  it('ships a CronJob (an Indexed Job of shards) and a DaemonSet (read-only host mounts) that the API accepts', () => {
    const docs = (file: string) => readFileSync(join(ROOT, 'deploy', file), 'utf8').split(/^---$/m).map((d) => parseYaml(d)).filter(Boolean);
    const cron = docs('audit-cronjob.yaml').find((d) => d.kind === 'CronJob');
    const job = cron.spec.jobTemplate.spec;
    expect(job.completionMode).toBe('Indexed');
    expect(String(job.template.spec.containers[0].env.find((e: { name: string }) => e.name === 'SHARDS').value)).toBe(String(job.completions));
    expect(job.template.spec.containers[0].args[0]).toContain('--shard "$JOB_COMPLETION_INDEX/$SHARDS"');
    // The audit never writes, and never reads a Secret: its role aggregates roles of list rules, resource by resource.
    const roles = docs('audit-cronjob.yaml').filter((d) => d.kind === 'ClusterRole');
    const rules = roles.flatMap((r) => r.rules ?? []);
    expect([...new Set(rules.flatMap((r: { verbs: string[] }) => r.verbs))]).toEqual(['list']);
    expect(rules.flatMap((r: { resources: string[] }) => r.resources).filter((x: string) => x === '*' || x === 'secrets')).toEqual([]);
    expect(roles.find((r) => r.metadata.name === 'decom-audit').aggregationRule.clusterRoleSelectors).toEqual([{ matchLabels: { 'decom.io/aggregate-to-audit': 'true' } }]);
    const ds = docs('audit-daemonset.yaml').find((d) => d.kind === 'DaemonSet').spec.template.spec;
    const hostVolumes = ds.volumes.filter((v: { hostPath?: unknown }) => v.hostPath).map((v: { name: string }) => v.name);
    expect(hostVolumes.length).toBeGreaterThan(0);
    for (const m of ds.containers[0].volumeMounts.filter((x: { name: string }) => hostVolumes.includes(x.name))) expect(m.readOnly, m.name).toBe(true);
    expect(ds.containers[0].args[0]).toMatch(/decom audit \S+ --connection local --host-root \/host --no-api --listen :9847 --every 5m/);

    ok('create', 'namespace', 'decom');
    const applied = ok('apply', '--dry-run=server', '-f', join(ROOT, 'deploy', 'audit-cronjob.yaml'), '-f', join(ROOT, 'deploy', 'audit-daemonset.yaml'));
    expect(applied.trim().split('\n')).toEqual([
      'serviceaccount/decom-audit created (server dry run)',
      'clusterrole.rbac.authorization.k8s.io/decom-audit created (server dry run)',
      'clusterrole.rbac.authorization.k8s.io/decom-audit-builtin created (server dry run)',
      'clusterrolebinding.rbac.authorization.k8s.io/decom-audit created (server dry run)',
      'persistentvolumeclaim/decom-reports created (server dry run)',
      'cronjob.batch/decom-audit created (server dry run)',
      'daemonset.apps/decom-node-audit created (server dry run)',
    ]);
    // A dry run stores nothing (the namespace's default account is the ServiceAccount controller's, made when it appears).
    expect(ok('get', 'cronjobs,daemonsets,serviceaccounts', '-n', 'decom', '-o', 'name').split('\n').filter((l) => l && l !== 'serviceaccount/default')).toEqual([]);
  });

  it("runs as the DaemonSet does, on the node itself: --connection local, chrooted, metrics served at /metrics", () => {
    const out = ssh(
      'node2',
      `printf 'all:\n  hosts:\n    node2:\n      ansible_host: 127.0.0.1\n' > /tmp/decom-inv.yaml
${process.execPath} ${CLI} audit /tmp/decom-inv.yaml --connection local --host-root / --no-api --listen 127.0.0.1:9847 --every 10s 2>/dev/null & pid=$!
for i in $(seq 100); do wget -q -O /tmp/decom.prom http://127.0.0.1:9847/metrics 2>/dev/null && break; sleep 0.1; done
kill $pid; wait $pid 2>/dev/null; rm -f /tmp/decom-inv.yaml; cat /tmp/decom.prom; rm -f /tmp/decom.prom`,
    );
    expect(spawnSync('promtool', ['check', 'metrics'], { input: out, encoding: 'utf8' }).status).toBe(0);
    expect(out).toContain('decom_audit_host_reachable{host="node2"} 1\n');
    expect(out).toContain('decom_residue{host="node2",kind="orphan-netns"} 0\n');
    expect(out).not.toContain('kind="phantom-pod"'); // --no-api: not checked, so no series (unknown is not 0)
  });

  it('--check plans the removal and changes nothing', () => {
    const [node, api] = [nodeSnapshot('node2'), apiSnapshot()];
    const r = audit('--fix', 'phantom-pod', '--check');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^fix plan \(--check: nothing is changed\):$/m);
    expect(r.stderr).toMatch(/node2: would stop and remove pod default\/orders-5f7b8c9d4-kq2xz's 2 containers/);
    expect(nodeSnapshot('node2')).toBe(node);
    expect(apiSnapshot()).toBe(api);
  });

  it('--fix leaves alone a phantom whose pod is back in the API, removes the other, and changes nothing else', () => {
    // Phantoms a fix is for run under no kubelet that still wants them (remove-node left them, the kubelet stopped): a kubelet
    // that saw no delete starts a removed pod's sandbox again, and the proof would rightly fail. node2's stops first.
    ssh('node2', 'systemctl stop kubelet');
    const planFile = join(tmp, 'plan.json');
    const first = audit('--output', 'json');
    writeFileSync(planFile, first.stdout);
    const orders = (JSON.parse(first.stdout) as Report).hosts.flatMap((h) => h.findings).find((f) => f.subject.startsWith('default/orders'))!;
    const metrics = (JSON.parse(first.stdout) as Report).hosts.flatMap((h) => h.findings).find((f) => f.subject.startsWith('default/metrics'))!;
    // Between the audit and the fix the orders pod comes back (a second restore): the store gets it, with its UID, and the API restarts.
    expect(decom(['sandbox', 'api', 'stop']).code).toBe(0);
    const storeFile = join(STATE_DIR, 'api', 'objects.json');
    const store = JSON.parse(readFileSync(storeFile, 'utf8'));
    store.rv += 1;
    store.objects.push({ resource: 'pods', obj: {
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'orders-5f7b8c9d4-kq2xz', namespace: 'default', uid: orders.target.uid, resourceVersion: String(store.rv), creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), labels: { app: 'orders' } },
      spec: { nodeName: 'node2', containers: [{ name: 'orders', image: 'registry.k8s.io/busybox:sandbox', command: ['/bin/sleep', '2147483647'] }] },
      status: { phase: 'Running' },
    } });
    writeFileSync(storeFile, JSON.stringify(store));
    expect(decom(['sandbox', 'api', 'start']).code).toBe(0);
    const [node, api] = [nodeSnapshot('node2'), apiSnapshot()];

    const r = auditJson('--fix', 'phantom-pod', '--from', planFile, '--yes');
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(/node2: LEFT ALONE phantom-pod default\/orders-5f7b8c9d4-kq2xz: the re-check no longer finds it/);
    expect(r.stderr).toMatch(/^node2: fixed phantom-pod default\/metrics-agent-x8w2p$/m);
    // The node lost exactly the metrics-agent pod's two tasks; the API is as it was.
    const gone = metrics.target.containers as string[];
    expect(section(nodeSnapshot('node2'), 'tasks')).toEqual(section(node, 'tasks').filter((t) => !gone.includes(t.split(' ')[0]!)));
    expect(section(node, 'tasks').length - gone.length).toBe(section(nodeSnapshot('node2'), 'tasks').length);
    for (const s of ['netns', 'links', 'mounts', 'pod dirs', 'leases', 'user data']) expect(section(nodeSnapshot('node2'), s), s).toEqual(section(node, s));
    expect(apiSnapshot()).toBe(api);
    // The re-audit: no phantom left; what the removed pod leaves (its dir, its empty cgroup) is of other kinds.
    expect(found(r.report).filter((l) => l.includes('phantom-pod'))).toEqual([]);
    expect(kindsOf(r.report)).toEqual(['orphan-pod-cgroup', 'orphan-pod-dir']);
    const again = auditJson('--fix', 'orphan-pod-cgroup,orphan-pod-dir', '--yes');
    expect(again.code, again.stderr).toBe(0);
    expect(found(again.report)).toEqual([]);
  });

  it("keeps credentials out of everything it writes: a kubelet's --token and a pod process's -password, in verify, the audit, a reset's journal and its failed step", () => {
    // node3, a healthy member. /usr/local/bin/kubelet runs itself again under the kubelet's path
    // (exec -a), so the probe names it kubelet and shows the flags it was given. TERM makes it start
    // its successor first, as Restart=always brings a kubelet back: that is how the reset below fails
    // on purpose, its kubelet step stopping one while another with the token runs.
    // The pod runs through CRI (as the phantoms did): the API has no such pod, so the audit shows its processes.
    ssh('node3', `cat > /usr/local/bin/kubelet <<'EOF'
#!/bin/bash
if [ "$DECOM_TEST_NAMED" != 1 ]; then DECOM_TEST_NAMED=1 exec -a /usr/local/bin/kubelet /bin/bash "$0" "$@"; fi
trap 'DECOM_TEST_NAMED= setsid /usr/local/bin/kubelet "$@" </dev/null >/dev/null 2>&1 & sleep 0.5; exit 0' TERM
while :; do sleep 1 & wait $!; done
EOF
chmod 0755 /usr/local/bin/kubelet
setsid /usr/local/bin/kubelet --token=zq-S3CRET-tok </dev/null >/dev/null 2>&1 &
node ${join(ROOT, '..', 'sandbox', 'dist', 'kubelet.js')} run-pod zq-agent-7d4f9 default agent --host-network -- /bin/sh -c 'while :; do sleep 1; done' agent -password zq-S3CRET-pw >/dev/null`);
    // decom's own probe, over SSH: both values are in what the node sends.
    const raw = ssh('node3', `${scriptPrelude('zq')}${probeBody(new Set(['processes']))}`);
    expect(raw).toContain('/usr/local/bin/kubelet\0--token=zq-S3CRET-tok\0');
    expect(raw).toContain('agent\0-password\0zq-S3CRET-pw\0');

    const SECRET = /zq-S3CRET/;
    const shown: Record<string, string> = {};
    shown['verify --details'] = decom(['verify', INVENTORY, 'node3', '--details']).stdout;
    shown['verify json'] = decom(['verify', INVENTORY, 'node3', '--output', 'json']).stdout;
    const [html, junit, textfile] = ['redact.html', 'redact.xml', 'redact.prom'].map((f) => join(tmp, f)) as [string, string, string];
    shown['audit json'] = audit('node3', '--output', 'json', '--html', html, '--junit', junit, '--textfile', textfile).stdout;
    shown['audit html'] = readFileSync(html, 'utf8');
    shown['audit junit'] = readFileSync(junit, 'utf8');
    shown['audit prometheus'] = readFileSync(textfile, 'utf8');
    shown['audit --details'] = audit('node3', '--details').stdout;
    const state = join(tmp, 'redact-state');
    const reset = decom(['run', INVENTORY, 'node3', '--playbook', 'reset', '--yes', '--output', 'json', '--state-dir', state]);
    shown['reset'] = reset.stdout + reset.stderr;
    const report = JSON.parse(reset.stdout) as RunReport;
    shown['journal'] = readFileSync(report.journal, 'utf8');
    shown['decom journal'] = decom(['journal', report.run, '--state-dir', state]).stdout;
    for (const [where, text] of Object.entries(shown)) expect(text, where).not.toMatch(SECRET);

    // The program and the flag's name stay: the kubelet as verify reports it, the pod's process in the audit's evidence.
    expect(shown['verify --details']).toMatch(/^node3 +kubelet-process +\d+ +\/usr\/local\/bin\/kubelet \/usr\/local\/bin\/kubelet --token=\(redacted\)$/m);
    expect(shown['verify json']).toContain('/usr/local/bin/kubelet --token=(redacted)');
    const phantom = (JSON.parse(shown['audit json']) as Report).hosts[0]!.findings.find((f) => f.subject === 'default/zq-agent-7d4f9')!;
    expect(phantom.kind).toBe('phantom-pod');
    expect(phantom.evidence).toContainEqual(expect.stringMatching(/^process \d+ \/bin\/sh -c while :; do sleep 1; done agent -password \(redacted\)$/));
    for (const where of ['audit html', 'audit junit']) expect(shown[where], where).toContain('agent -password (redacted)');
    // The reset stops at its kubelet step, failed, the successor kubelet left: named with its flag, not its token.
    const kubelet = report.hosts[0]!.steps.find((s) => s.name === 'kubelet')!;
    expect([report.hosts[0]!.clean, kubelet.status, kubelet.reason]).toEqual([false, 'failed', '1 left after its actions']);
    expect(kubelet.left).toEqual([expect.objectContaining({ kind: 'kubelet-process', detail: '/usr/local/bin/kubelet /usr/local/bin/kubelet --token=(redacted)' })]);
  });
});

describe('a healthy cluster: nothing is reported; stale members, Nodes and attachments of machines that are gone are', () => {
  beforeAll(() => up(['--nodes', '3', '--etcd', '--scenario', 'cluster', '--node-monitor-grace-period', '5']));
  afterAll(() => down());

  it('reports nothing on the healthy cluster scenario, even with no margin', () => {
    const { code, report } = auditJson('--stuck-after', '0', '--stale-after', '0');
    expect(found(report)).toEqual([]);
    expect(code).toBe(0);
    expect(report.hosts.every((h) => h.reachable)).toBe(true);
  });

  it('reports an etcd member, a Node and a VolumeAttachment no inventory host accounts for, in the cluster row', () => {
    ssh('node1', `ETCDCTL_API=3 etcdctl --endpoints http://${addrOf('node1')}:2379 member add ghost --learner --peer-urls=http://${subnetAddr(99)}:2380 >/dev/null`);
    writeFileSync(join(tmp, 'ghosts.yaml'), `apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: csi-0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2, finalizers: [external-attacher/ebs-csi-aws-com]}
spec: {attacher: ebs.csi.aws.com, nodeName: node9, source: {persistentVolumeName: pvc-lost}}
---
apiVersion: v1
kind: Node
metadata: {name: node8, labels: {kubernetes.io/hostname: node8}}
`);
    ok('apply', '-f', join(tmp, 'ghosts.yaml'));
    sleep(7); // node8 never reports: NotReady after the 5 s grace period
    const { code, report } = auditJson('--stale-after', '1s', '--details');
    expect(code).toBe(1);
    expect(found(report)).toEqual([
      '(cluster) stale-etcd-member ' + report.cluster.find((f) => f.kind === 'stale-etcd-member')!.subject,
      '(cluster) stale-node node8',
      '(cluster) stale-volume-attachment csi-0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2',
    ].sort());
    const detail = (kind: string) => report.cluster.find((f) => f.kind === kind)!.detail;
    expect(detail('stale-etcd-member')).toMatch(/^etcd member [0-9a-f]+ \(learner\) at http:\/\/[\d.]+:2380 has no host in the inventory$/);
    expect(detail('stale-etcd-member')).toContain(` at http://${subnetAddr(99)}:2380 `);
    expect(detail('stale-node')).toMatch(/^NotReady for \d+s: its host is not in the inventory$/);
    expect(detail('stale-volume-attachment')).toBe('attaches pvc-lost to Node node9, which is deleted');
    // A shard other than the first leaves the cluster's row to shard 0; together the shards audit each host once.
    const shards = ['0/2', '1/2'].map((s) => auditJson('--shard', s, '--stale-after', '1s').report);
    expect(shards.flatMap((s) => s.hosts.map((h) => h.host)).sort()).toEqual(['node1', 'node2', 'node3']);
    expect(shards[0]!.cluster).toHaveLength(3);
    expect(shards[1]!.cluster).toHaveLength(0);
  });
});

describe('stuck-terminating: pods and a namespace stuck, each with why; force-deleted or finalized only when safe and asked', () => {
  beforeAll(() => up(['--nodes', '3', '--scenario', 'stuck-terminating', '--node-monitor-grace-period', '5']));
  afterAll(() => down());

  it('reports the stuck pods (finalizer, NotReady node with containers running), the namespace with its conditions, and the NotReady Node', () => {
    const expected = [
      '(cluster) stuck-terminating-namespace retired',
      '(cluster) unavailable-apiservice v1beta1.metrics.k8s.io',
      'node2 stuck-terminating-pod default/report-gen-28734',
      'node2 stuck-terminating-pod retired/exporter-7xk2m',
      'node3 stale-node node3',
      'node3 stuck-terminating-pod default/sensor-agent-4kq9t',
    ];
    // The API's controllers get there on their own passes (node3 NotReady once its Lease
    // is older than the 5 s grace period, the APIService's availability, the namespace's
    // conditions), later on a busy machine: the audit is asked again until they have.
    let audited = auditJson('--stuck-after', '0', '--stale-after', '1s');
    for (const end = Date.now() + 60_000; JSON.stringify(found(audited.report)) !== JSON.stringify(expected) && Date.now() < end; ) {
      sleep(1);
      audited = auditJson('--stuck-after', '0', '--stale-after', '1s');
    }
    const { code, report } = audited;
    expect(found(report)).toEqual(expected);
    // 3, not 1: while its APIService is down, metrics.k8s.io/v1beta1 cannot be listed, and says so.
    expect(code).toBe(3);
    expect(report.notChecked).toEqual({ kinds: [], why: 'some resources could not be listed', resources: { 'metrics.k8s.io/v1beta1': expect.stringMatching(/metrics\.k8s\.io\/v1beta1/) } });
    const f = (subject: string) => [...report.hosts.flatMap((h) => h.findings), ...report.cluster].find((x) => x.subject === subject)!;
    expect(f('default/report-gen-28734').detail).toMatch(/^Terminating for \d+s past its grace period on node2: finalizers left: example\.com\/archive$/);
    expect(f('default/sensor-agent-4kq9t').detail).toMatch(/: its node node3 is NotReady; 2 of its containers still running on node3$/);
    expect(f('retired').detail).toMatch(/NamespaceContentRemaining: Some resources are remaining: pods\. has 1 resource instances/);
    expect(f('retired').detail).toMatch(/finalizers left: kubernetes; unavailable APIServices: v1beta1\.metrics\.k8s\.io$/);
    expect(f('retired').evidence).toContain('pod retired/exporter-7xk2m');
    expect(f('node3').detail).toMatch(/^NotReady for \d+s: its host node3 answers, its kubelet does not report$/);
    // With the default margin (5 minutes past the deadline) nothing is stuck yet; an unavailable APIService is always said.
    expect(found(auditJson('--stale-after', '1h').report)).toEqual(['(cluster) unavailable-apiservice v1beta1.metrics.k8s.io']);
  });

  it('--fix refuses the pods a force delete would not be safe for, and changes nothing', () => {
    const api = apiSnapshot();
    const r = audit('--fix', 'stuck-terminating-pod', '--stuck-after', '0', '--yes');
    expect(r.code, r.stderr).toBe(3); // left alone (4), and the down APIService's group not checked (3 wins)
    expect(r.stderr).toMatch(/node2: LEFT ALONE stuck-terminating-pod default\/report-gen-28734: held by finalizers \(example\.com\/archive\): their controller must finish/);
    expect(r.stderr).toMatch(/node3: LEFT ALONE stuck-terminating-pod default\/sensor-agent-4kq9t: 2 of its containers still run on node3/);
    expect(apiSnapshot()).toBe(api);
  });

  it('force-deletes the pod once its containers are proven dead, and finalizes the namespace only when named', () => {
    // The sensor-agent's containers die on node3 (its kubelet is stopped: nobody reports it to the API).
    ssh('node3', `for id in $(ctr -n k8s.io c ls -q 'labels."io.kubernetes.pod.name"==sensor-agent-4kq9t'); do ctr -n k8s.io t kill -s SIGKILL "$id"; done; sleep 0.5`);
    const before = apiSnapshot();
    const r = audit('--fix', 'stuck-terminating-pod', '--stuck-after', '0', '--yes');
    expect(r.code, r.stderr).toBe(3); // the finalizer-held pods still left alone (4); the down APIService's group not checked (3 wins)
    expect(r.stdout).toMatch(/^not checked: stuck-deleting-object: metrics\.k8s\.io\/v1beta1: /m);
    expect(r.stderr).toMatch(/^node3: fixed stuck-terminating-pod default\/sensor-agent-4kq9t$/m);
    const after = apiSnapshot();
    expect(before.split('\n').filter((l) => !after.split('\n').includes(l)).map((l) => l.split(/\s+/).slice(0, 3).join(' '))).toEqual(['Pod default sensor-agent-4kq9t']);
    expect(after.split('\n').filter((l) => !before.split('\n').includes(l))).toEqual([]);

    const ns = audit('--force-finalize', 'retired', '--stuck-after', '0', '--yes');
    expect(ns.stderr).toMatch(/^\(cluster\): fixed stuck-terminating-namespace retired$/m);
    expect(ok('get', 'namespaces', '-o', 'name')).not.toContain('namespace/retired');
    expect(ok('get', 'pods', '-n', 'default', '-o', 'name')).toContain('pod/report-gen-28734'); // nothing else was touched
  });
});

describe('force-deleted-pods, no API: the node-side kinds, and exactly the selected kinds fixed', () => {
  beforeAll(() => up(['--nodes', '2', '--scenario', 'force-deleted-pods']));
  afterAll(() => down());

  it('reports every trace the lost runtime left (pod dir, netns, veth, lease, pod cgroup), says which kinds it could not check, and never the live pod or the collateral', () => {
    const { code, report } = auditJson();
    expect(code).toBe(1);
    for (const node of ['node1', 'node2']) {
      const h = report.hosts.find((x) => x.host === node)!;
      const count = (k: string) => h.findings.filter((f) => f.kind === k).length;
      expect([count('orphan-pod-dir'), count('orphan-netns'), count('orphan-veth'), count('orphan-ipam-lease'), count('orphan-pod-cgroup')], node).toEqual([2, 2, 2, 2, 2]);
      // Exactly the dead pods' traces: every pod dir but the live coredns pod's, every cni netns but its.
      const snap = nodeSnapshot(node);
      const live = ssh(node, `ctr -n k8s.io c ls -q 'labels."io.cri-containerd.kind"==sandbox'`).trim();
      expect(live).toMatch(/^[0-9a-f]{64}$/);
      expect(h.findings.filter((f) => f.kind === 'orphan-ipam-lease').map((f) => f.target.sandbox)).not.toContain(live);
      expect(h.findings.filter((f) => f.kind === 'orphan-netns').map((f) => f.subject).sort()).toEqual(section(snap, 'netns').filter((n) => n.startsWith('cni-') && !ssh(node, `ip netns pids ${n}`).trim()).sort());
      expect(h.findings.find((f) => f.kind === 'orphan-pod-dir')!.detail).toBe('pod dir of no pod the runtime has, 3 mounts still in it');
    }
    expect(kindsOf(report)).toEqual(['orphan-ipam-lease', 'orphan-netns', 'orphan-pod-cgroup', 'orphan-pod-dir', 'orphan-veth']);
    expect(report.notChecked!.kinds).toEqual(['phantom-pod', 'stuck-terminating-pod', 'stuck-terminating-namespace', 'stale-node', 'stale-volume-attachment', 'stale-local-pv', 'stuck-deleting-object', 'unavailable-apiservice', 'finished-pods']);
    expect(report.notChecked!.why).toMatch(/^no kubeconfig/);
    expect(JSON.stringify(report)).not.toMatch(COLLATERAL);
    expect(audit().stdout).toMatch(/^node1\s+-\s+2\s+2\s+2\s+2\s+2\s+-\s+-\s+-\s+0\s+-\s+-\s+-\s+-\s+-$/m);
  });

  it('--fix orphan-pod-dir,orphan-ipam-lease removes those and nothing else; a re-audit is clean for them', () => {
    const before = nodeSnapshot('node1');
    // No terminal to confirm on and no --yes: refused before any host is asked anything, nothing changed.
    const unconfirmed = audit('--fix', 'orphan-pod-dir');
    expect([unconfirmed.code, unconfirmed.stdout, unconfirmed.stderr]).toEqual([2, '', 'decom: refusing to fix without confirmation: no terminal to ask on; pass --yes\n']);
    expect(nodeSnapshot('node1')).toBe(before);
    const planned = auditJson().report.hosts.find((h) => h.host === 'node1')!.findings;
    const r = auditJson('--fix', 'orphan-pod-dir,orphan-ipam-lease', '--yes');
    expect(r.code, r.stderr).toBe(1); // the netns and veths are still there: not selected
    const after = nodeSnapshot('node1');
    const dirs = planned.filter((f) => f.kind === 'orphan-pod-dir').map((f) => (f.target.dir as string).split('/').pop());
    const leases = planned.filter((f) => f.kind === 'orphan-ipam-lease').map((f) => (f.target.file as string).split('/').pop());
    expect(section(after, 'pod dirs')).toEqual(section(before, 'pod dirs').filter((d) => !dirs.includes(d)));
    expect(section(after, 'leases')).toEqual(section(before, 'leases').filter((l) => !leases.includes(l)));
    expect(section(after, 'mounts')).toEqual(section(before, 'mounts').filter((m) => !dirs.some((d) => m.startsWith(`/var/lib/kubelet/pods/${d}/`))));
    expect(section(after, 'mounts')).toContain('/srv/appdata');
    expect(ssh('node1', 'cat /var/lib/kubelet/plugins/kubernetes.io/csi/csi.sandbox.decom.io/*/globalmount/PV-DATA | wc -l').trim()).toBe('2'); // the volumes' data is the driver's
    for (const s of ['tasks', 'netns', 'links', 'cgroups', 'user data']) expect(section(after, s), s).toEqual(section(before, s));
    expect(kindsOf(r.report)).toEqual(['orphan-netns', 'orphan-pod-cgroup', 'orphan-veth']);
  });

  it('--fix of every node kind leaves the nodes with no finding, the live pod, the QoS tree and the collateral untouched', () => {
    const before = nodeSnapshot('node2');
    const dead = auditJson().report.hosts.find((h) => h.host === 'node2')!.findings.filter((f) => f.kind === 'orphan-pod-cgroup').map((f) => f.subject);
    expect(dead).toHaveLength(2);
    const r = auditJson('--fix', 'orphan-veth,orphan-netns,orphan-pod-dir,orphan-ipam-lease,orphan-pod-cgroup', '--yes');
    expect(r.code, r.stderr).toBe(0);
    expect(found(r.report)).toEqual([]);
    const after = nodeSnapshot('node2');
    expect(section(after, 'tasks')).toEqual(section(before, 'tasks'));
    // Only the dead pods' cgroups and slices went (through systemd): the live pod's, the QoS slices and kubepods.slice stay.
    expect(section(after, 'cgroups')).toEqual(section(before, 'cgroups').filter((d) => !dead.some((x) => d === x || d.startsWith(`${x}/`))));
    expect(section(after, 'slices')).toEqual(section(before, 'slices').filter((u) => !dead.some((x) => x.endsWith(`/${u}`))));
    expect(section(after, 'slices')).toEqual(expect.arrayContaining(['kubepods-besteffort.slice', 'kubepods-burstable.slice', 'kubepods.slice']));
    expect(section(after, 'netns')).toEqual(['app-vpn', ...section(before, 'netns').filter((n) => n.startsWith('cni-') && section(after, 'netns').includes(n))].sort());
    expect(section(after, 'links')).toContain('app-veth0');
    expect(section(after, 'user data')).toEqual(['user data: must survive']);
    expect(auditJson().code).toBe(0);
  });
});

describe('runtime-lost: a lost runtime beside live pods, with the API and without; every trace fixed, the live pods untouched', () => {
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--scenario', 'runtime-lost']);
  });
  afterAll(() => down());
  const NODE_KINDS = ['orphan-ipam-lease', 'orphan-netns', 'orphan-pod-cgroup', 'orphan-pod-dir', 'orphan-veth'];
  /** What runs on node2 now, by an independent look: the CRI's sandboxes (via ctr), each pod's processes and netns, the QoS tree. */
  const live = () =>
    ssh('node2', `ctr -n k8s.io t ls | tail -n +2 | awk '{print $1, $2, $3}' | sort
for p in $(ctr -n k8s.io t ls -q); do readlink /proc/$(ctr -n k8s.io t ls | awk -v id=$p '$1 == id {print $2}')/ns/net; done | sort
systemctl list-units --all --plain --no-legend 'kubepods-besteffort.slice' 'kubepods-burstable.slice' 'kubepods.slice' | cut -d' ' -f1`);

  it('reports every trace of the lost sandboxes as an orphan of its kind, with the API and with --no-api alike, and nothing of the live pods', () => {
    const withApi = auditJson();
    const node2 = (r: Report) => r.hosts.find((h) => h.host === 'node2')!.findings.filter((f) => NODE_KINDS.includes(f.kind)).map((f) => `${f.kind} ${f.subject}`).sort();
    const kinds = [...new Set(node2(withApi.report).map((l) => l.split(' ')[0]))].sort();
    expect(kinds).toEqual(NODE_KINDS);
    // --no-api: the runtime answers and knows none of them; the same node-side findings.
    expect(node2(auditJson('--no-api').report)).toEqual(node2(withApi.report));
    // Independently: every reported netns is one no process is in; every lease names a sandbox containerd does not have;
    // every pod dir and pod cgroup is of a pod the API does not have.
    const f = withApi.report.hosts.find((h) => h.host === 'node2')!.findings;
    const apiUids = JSON.parse(ok('get', 'pods', '-A', '-o', 'json')).items.map((p: { metadata: { uid: string } }) => p.metadata.uid);
    const sandboxes = ssh('node2', 'ctr -n k8s.io c ls -q').split('\n');
    for (const x of f.filter((y) => y.kind === 'orphan-netns')) expect(ssh('node2', `ip netns pids ${x.subject}`).trim(), x.subject).toBe('');
    for (const x of f.filter((y) => y.kind === 'orphan-ipam-lease')) expect(sandboxes).not.toContain(x.target.sandbox);
    for (const x of f.filter((y) => y.kind === 'orphan-pod-dir' || y.kind === 'orphan-pod-cgroup')) expect(apiUids.some((u: string) => x.subject.includes(u) || x.subject.includes(u.replaceAll('-', '_'))), x.subject).toBe(false);
    // The force-deleted pods' and the DaemonSet pods' old sandboxes: two netns of each kind at least.
    expect(f.filter((y) => y.kind === 'orphan-netns').length).toBeGreaterThanOrEqual(2);
  });

  it('--fix of every node kind removes exactly those; a re-audit is clean; the live pods, their netns and the QoS tree are as they were', () => {
    const before = live();
    const r = auditJson('--fix', NODE_KINDS.join(','), '--yes');
    expect(r.code, r.stderr).toBe(0);
    expect(found(r.report)).toEqual([]);
    expect(live()).toBe(before);
    expect(auditJson().code).toBe(0);
    expect(ok('get', 'pods', '-A', '--field-selector', 'spec.nodeName=node2', '-o', 'jsonpath={.items[*].status.phase}').split(' ').every((p) => p === 'Running')).toBe(true);
  });
});

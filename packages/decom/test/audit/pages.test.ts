// Every list decom makes reads every page (cluster/pages.ts): with a page smaller than
// each list (DECOM_LIST_PAGE_SIZE), the audit, the decommission's plan, its drain and
// verify see what they see with the default page, and the sandbox API's request log
// (its audit log: every request, its User-Agent and URI) shows the pages asked.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { listAll, listPageSize, PAGE_SIZE, type Page, type PageRequest } from '../../src/cluster/pages.js';
import { UserError } from '../../src/util/errors.js';
import { decom, down, ROOT, STATE_DIR, up } from '../helpers/sandbox.js';
import { INVENTORY, type RunReport } from '../helpers/run.js';
import { KUBECONFIG, applyIn, ok, requireKubectl, sleep } from '../helpers/kubectl.js';
import { tempDir } from '../helpers/temp.js';

describe('listAll: every page of a list', () => {
  /** A list of `items` served `limit` at a time, with opaque continue tokens; what it was asked, recorded. */
  const served = (items: string[], last: '' | undefined = undefined) => {
    const asked: PageRequest[] = [];
    const list = async (p: PageRequest): Promise<Page<string>> => {
      asked.push(p);
      const start = p._continue ? Number(p._continue.slice('tok-'.length)) : 0;
      const end = start + p.limit;
      return { items: items.slice(start, end), metadata: end < items.length ? { _continue: `tok-${end}` } : last === '' ? { _continue: '' } : {} };
    };
    return { list, asked };
  };

  it('concatenates the pages in order, passing each continue token back, until a page gives none', async () => {
    const items = ['a', 'b', 'c', 'd', 'e'];
    const { list, asked } = served(items);
    expect(await listAll(list, 2)).toEqual(items);
    expect(asked).toEqual([{ limit: 2 }, { limit: 2, _continue: 'tok-2' }, { limit: 2, _continue: 'tok-4' }]);
  });

  it('stops on an empty continue token (the API\'s last page), and asks once for an empty list', async () => {
    const { list, asked } = served(['a', 'b', 'c'], '');
    expect(await listAll(list, 3)).toEqual(['a', 'b', 'c']);
    expect(asked).toEqual([{ limit: 3 }]);
    const none = served([]);
    expect(await listAll(none.list, 1)).toEqual([]);
    expect(none.asked).toEqual([{ limit: 1 }]);
  });

  it('pages by DECOM_LIST_PAGE_SIZE when no size is given, else by 500', async () => {
    const saved = process.env.DECOM_LIST_PAGE_SIZE;
    try {
      process.env.DECOM_LIST_PAGE_SIZE = '1';
      const one = served(['a', 'b']);
      expect(await listAll(one.list)).toEqual(['a', 'b']);
      expect(one.asked.map((p) => p.limit)).toEqual([1, 1]);
      delete process.env.DECOM_LIST_PAGE_SIZE;
      const all = served(['a', 'b']);
      await listAll(all.list);
      expect(all.asked).toEqual([{ limit: PAGE_SIZE }]);
      expect(PAGE_SIZE).toBe(500);
    } finally {
      if (saved === undefined) delete process.env.DECOM_LIST_PAGE_SIZE;
      else process.env.DECOM_LIST_PAGE_SIZE = saved;
    }
  });

  it("a page's error is the list's: nothing half-read is returned", async () => {
    let n = 0;
    const failing = async (p: PageRequest): Promise<Page<string>> => {
      if (n++ === 1) throw new Error('the second page failed');
      return { items: ['x'], metadata: { _continue: `after-${p.limit}` } };
    };
    await expect(listAll(failing, 1)).rejects.toThrow('the second page failed');
  });

  it('a server that gives back a continue token it gave before is an error, not a list read forever', async () => {
    let asked = 0;
    const looping = async (): Promise<Page<string>> => ({ items: [`item-${asked++}`], metadata: { _continue: asked === 1 ? 'tok-a' : 'tok-b' } });
    await expect(listAll(looping, 1)).rejects.toThrow('the API server returned the same continue token twice while listing (after 3 items)');
    expect(asked).toBe(3);
  });

  it('DECOM_LIST_PAGE_SIZE: a whole number of at least 1; anything else is bad input naming the variable', () => {
    expect(listPageSize({})).toBe(500);
    expect(listPageSize({ DECOM_LIST_PAGE_SIZE: '' })).toBe(500);
    expect(listPageSize({ DECOM_LIST_PAGE_SIZE: '1' })).toBe(1);
    expect(listPageSize({ DECOM_LIST_PAGE_SIZE: ' 25 ' })).toBe(25);
    for (const bad of ['0', '-1', 'two', '1.5', '1e3', '0x10', ' ', '2%']) {
      let e: unknown;
      try {
        listPageSize({ DECOM_LIST_PAGE_SIZE: bad });
      } catch (x) {
        e = x;
      }
      expect(e, bad).toBeInstanceOf(UserError);
      expect((e as UserError).exitCode).toBe(2);
      expect((e as UserError).message).toBe(`DECOM_LIST_PAGE_SIZE ${JSON.stringify(bad)}: expected a whole number of at least 1 (the items per page of the API's lists; default 500)`);
    }
  });
});

/** The sandbox API's request log (JSON lines), as its server writes it. */
const LOG = join(STATE_DIR, 'api', 'audit.log');
interface Logged { userAgent: string; verb: string; requestURI: string }

/** decom's requests (User-Agent decom/…) while `work` ran. */
async function requestsOf<T>(work: () => T | Promise<T>): Promise<{ result: T; lists: URL[]; gets: URL[] }> {
  const from = statSync(LOG).size;
  const result = await work();
  const mine = readFileSync(LOG).subarray(from).toString('utf8').split('\n').filter(Boolean)
    .map((l) => JSON.parse(l) as Logged)
    .filter((e) => e.userAgent.startsWith('decom/'));
  const url = (e: Logged) => new URL(e.requestURI, 'https://api');
  return { result, lists: mine.filter((e) => e.verb === 'list').map(url), gets: mine.filter((e) => e.verb === 'get').map(url) };
}

/** The list requests by path (and selectors), each as [limit, continue?]. */
function pagesByList(lists: URL[]): Map<string, [string | null, string | null][]> {
  const out = new Map<string, [string | null, string | null][]>();
  for (const u of lists) {
    const selectors = ['fieldSelector', 'labelSelector'].filter((k) => u.searchParams.has(k)).map((k) => `${k}=${u.searchParams.get(k)}`);
    const key = [u.pathname, ...selectors].join(' ');
    out.set(key, [...(out.get(key) ?? []), [u.searchParams.get('limit'), u.searchParams.get('continue')]]);
  }
  return out;
}

/** How many objects kubectl counts (kubectl get … -o name). */
const countOf = (...what: string[]) => ok('get', ...what, '-o', 'name').split('\n').filter(Boolean).length;

interface AuditReport { hosts: { host: string; reachable: boolean; findings: { kind: string; subject: string }[] }[]; cluster: { kind: string; subject: string }[]; notChecked?: unknown }
const found = (r: AuditReport) => [...r.hosts.flatMap((h) => h.findings.map((f) => `${h.host} ${f.kind} ${f.subject}`)), ...r.cluster.map((f) => `(cluster) ${f.kind} ${f.subject}`)].sort();

const json = <T>(r: { code: number; stdout: string; stderr: string }, what: string): T => {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`${what} printed no JSON (exit ${r.code}): ${r.stdout}${r.stderr}`);
  }
};
const paged = (size: string) => ({ env: { DECOM_LIST_PAGE_SIZE: size } });
const dflt = { env: { DECOM_LIST_PAGE_SIZE: '' } };

describe('against the sandbox API: DECOM_LIST_PAGE_SIZE smaller than every list, the same results, every page asked', () => {
  const state = tempDir('decom-pages-');
  const work = tempDir('decom-pages-yaml-');
  const apply = applyIn(work);
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--scenario', 'cluster', '--node-monitor-grace-period', '5']);
    // What only a complete list finds: three Nodes of no host (stale), three attachments to Nodes that are gone (stale),
    // a second attachment and two kubelet CSRs of node3 (what its removal deletes). The attachments are another driver's:
    // held by its attacher's finalizer, which no attacher here removes, so the sandbox's attach/detach controller leaves them.
    const node = (n: string) => `apiVersion: v1\nkind: Node\nmetadata: {name: ${n}, labels: {kubernetes.io/hostname: ${n}}}\n`;
    const va = (name: string, nodeName: string) =>
      `apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: ${name}, finalizers: [external-attacher/ebs-csi-aws-com]}\nspec: {attacher: ebs.csi.aws.com, nodeName: ${nodeName}, source: {persistentVolumeName: pv-${name}}}\n`;
    const csr = (name: string) =>
      `apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: ${name}}\nspec: {request: ${Buffer.from('not a real CSR').toString('base64')}, signerName: kubernetes.io/kube-apiserver-client-kubelet, usages: [digital signature, client auth], username: "system:node:node3"}\n`;
    apply('planted', [node('ghost1'), node('ghost2'), node('ghost3'), va('csi-gone-a', 'gone-a'), va('csi-gone-b', 'gone-b'), va('csi-gone-c', 'gone-c'), va('csi-node3-extra', 'node3'), csr('node-csr-node3-a'), csr('node-csr-node3-b')].join('---\n'));
    sleep(7); // the ghosts never report: NotReady after the 5 s grace period
  });
  afterAll(() => down());

  /**
   * Kubeconfigs of the sandbox API with other credentials: a client certificate its CA signs, in system:masters
   * (as kubeadm's admin.conf user), and an exec plugin handing out the admin token (only the client library runs
   * one, and this one leaves a mark); and a hook for every thread (the lists' worker too) that refuses to
   * resolve the client library.
   */
  const credentials = (() => {
    let made: { cert: string; exec: string; execRan: string; noLibrary: NodeJS.ProcessEnv } | undefined;
    return () => {
      if (made) return made;
      const keys = tempDir('decom-pages-credentials-');
      const f = (name: string) => join(keys, name);
      writeFileSync(f('no-client-library.mjs'), `import { register } from 'node:module';\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify("export async function resolve(s, c, next) { if (s.startsWith('@kubernetes/client-node')) throw new Error('the test refuses to load ' + s); return next(s, c); }")}));\n`);
      const ca = join(STATE_DIR, 'api');
      const openssl = (...args: string[]) => expect(spawnSync('openssl', args, { encoding: 'utf8' }).status).toBe(0);
      openssl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/O=system:masters/CN=decom-audit-cert', '-keyout', f('user.key'), '-out', f('user.csr'));
      openssl('x509', '-req', '-in', f('user.csr'), '-CA', join(ca, 'ca.crt'), '-CAkey', join(ca, 'ca.key'), '-CAcreateserial', '-days', '1', '-out', f('user.crt'));
      const admin = parseYaml(readFileSync(KUBECONFIG, 'utf8')) as { users: { user: { token: string } }[] };
      const withUser = (name: string, user: Record<string, unknown>) => {
        writeFileSync(f(name), JSON.stringify({ ...admin, users: [{ name: 'admin', user }] }));
        return f(name);
      };
      const b64 = (file: string) => readFileSync(file).toString('base64');
      const credential = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: admin.users[0]!.user.token } });
      made = {
        cert: withUser('cert.kubeconfig', { 'client-certificate-data': b64(f('user.crt')), 'client-key-data': b64(f('user.key')) }),
        exec: withUser('exec.kubeconfig', { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: '/bin/sh', args: ['-c', `touch ${f('exec-ran')}; printf '%s' '${credential}'`], interactiveMode: 'Never' } }),
        execRan: f('exec-ran'),
        noLibrary: { NODE_OPTIONS: `--import=${f('no-client-library.mjs')}` },
      };
      return made;
    };
  })();

  it('decom audit: the same findings page by page, each list read in as many requests as it has objects', async () => {
    const audit = (o: { env: NodeJS.ProcessEnv }) => decom(['audit', INVENTORY, '--output', 'json', '--stale-after', '1s'], o);
    const whole = await requestsOf(() => audit(dflt));
    const one = await requestsOf(() => audit(paged('1')));
    const report = json<AuditReport>(one.result, 'decom audit');
    expect(report.notChecked).toBeUndefined();
    expect(found(report)).toEqual(found(json<AuditReport>(whole.result, 'decom audit')));
    expect(found(report)).toEqual([
      '(cluster) stale-node ghost1', '(cluster) stale-node ghost2', '(cluster) stale-node ghost3',
      '(cluster) stale-volume-attachment csi-gone-a', '(cluster) stale-volume-attachment csi-gone-b', '(cluster) stale-volume-attachment csi-gone-c',
    ]);
    // Every resource the audit lists (the seven read in full, every other one metadata-only), and the objects each
    // holds now, as kubectl counts them (the kubelets' and the scenario's are steady; the audits change nothing).
    const listed = [...new Set(whole.lists.map((u) => u.pathname))].sort();
    const full = ['/api/v1/pods', '/api/v1/nodes', '/api/v1/namespaces', '/apis/storage.k8s.io/v1/volumeattachments', '/apis/coordination.k8s.io/v1/leases', '/apis/apiregistration.k8s.io/v1/apiservices', '/api/v1/persistentvolumes'];
    expect(listed).toEqual(expect.arrayContaining([...full, '/api/v1/configmaps', '/apis/apps/v1/daemonsets']));
    const resourceOf = (path: string) => {
      const p = path.split('/');
      return path.startsWith('/api/') ? (p[3] as string) : `${p[4]}.${p[2]}`;
    };
    const objects = Object.fromEntries(listed.map((p) => [p, countOf(resourceOf(p), '-A')]));
    expect(objects['/api/v1/nodes']).toBe(6);
    for (const p of full.slice(0, 5)) expect(objects[p], p).toBeGreaterThan(1);
    // The default: one request per list, 500 at most.
    expect(Object.fromEntries(pagesByList(whole.lists))).toEqual(Object.fromEntries(listed.map((p) => [p, [['500', null]]])));
    // One by one: a first page, then a request per further object, each with the token the page before gave.
    const pages = pagesByList(one.lists);
    expect([...pages.keys()].sort()).toEqual(listed);
    for (const [path, n] of Object.entries(objects)) {
      const asked = pages.get(path)!;
      const requests = Math.max(n, 1); // an empty list is one request too
      expect(asked.length, path).toBe(requests);
      expect(asked.every(([limit]) => limit === '1'), path).toBe(true);
      expect(asked.map(([, token]) => token !== null), path).toEqual([false, ...Array(requests - 1).fill(true)]);
    }
  });

  it("readCluster on either path (plain HTTPS for a token, the library's worker thread for an exec plugin) reads DECOM_LIST_PAGE_SIZE: pages of two, and a bad value is still an input error", async () => {
    const { readCluster } = (await import(join(ROOT, 'dist', 'audit', 'cluster.js'))) as typeof import('../../src/audit/cluster.js');
    const saved = process.env.DECOM_LIST_PAGE_SIZE;
    try {
      for (const kubeconfig of [KUBECONFIG, credentials().exec]) {
        process.env.DECOM_LIST_PAGE_SIZE = '2';
        const { result, lists } = await requestsOf(() => readCluster({ kubeconfig }));
        expect('view' in result && result.view.nodes.map((n) => n.metadata?.name).sort()).toEqual(['ghost1', 'ghost2', 'ghost3', 'node1', 'node2', 'node3']);
        expect(lists.length).toBeGreaterThan(5);
        expect(lists.every((u) => u.searchParams.get('limit') === '2')).toBe(true);
        expect(lists.filter((u) => u.pathname === '/api/v1/nodes').map((u) => u.searchParams.has('continue'))).toEqual([false, true, true]);
        process.env.DECOM_LIST_PAGE_SIZE = '0';
        const refused = await readCluster({ kubeconfig }).then(() => undefined, (e: unknown) => e as { message: string; exitCode: number });
        expect(refused && [refused.exitCode, refused.message]).toEqual([2, "DECOM_LIST_PAGE_SIZE \"0\": expected a whole number of at least 1 (the items per page of the API's lists; default 500)"]);
      }
    } finally {
      if (saved === undefined) delete process.env.DECOM_LIST_PAGE_SIZE;
      else process.env.DECOM_LIST_PAGE_SIZE = saved;
    }
  });

  it("over a token and over a client certificate, the audit never loads the client library and reports what the library path does; an exec plugin's credential takes the library", () => {
    const { cert, exec, execRan, noLibrary } = credentials();
    const audit = (kubeconfig: string, env: NodeJS.ProcessEnv = {}) =>
      json<AuditReport & { apiError?: string }>(decom(['audit', INVENTORY, '--kubeconfig', kubeconfig, '--output', 'json', '--stale-after', '1s'], { env: { ...dflt.env, ...env } }), `decom audit --kubeconfig ${kubeconfig}`);
    const library = audit(exec);
    expect(existsSync(execRan)).toBe(true);
    expect(library.apiError).toBeUndefined();
    expect(found(library)).toContain('(cluster) stale-node ghost1');
    const stable = (r: AuditReport) => [...found(r), JSON.stringify(r.notChecked ?? null)];
    for (const plain of [KUBECONFIG, cert]) {
      const r = audit(plain, noLibrary);
      expect(r.apiError, plain).toBeUndefined();
      expect(stable(r), plain).toEqual(stable(library));
    }
    // The hook holds: with it, the exec plugin's audit cannot list the API at all.
    expect(audit(exec, noLibrary).apiError).toContain('the test refuses to load @kubernetes/client-node');
  });

  /** The cluster steps' actions of a `decom run … --output json` of node3. */
  const clusterActions = (r: RunReport) =>
    r.hosts.find((h) => h.host === 'node3')!.steps.filter((s) => ['drain', 'volumes', 'delete-node'].includes(s.name)).map((s) => `${s.name}: ${s.actions.map((a) => a.what).join(' | ')}`);
  const run = (args: string[], o: { env: NodeJS.ProcessEnv }) => decom(['run', INVENTORY, 'node3', '--yes', '--output', 'json', '--state-dir', state, ...args], o);

  it("decom run --check (the decommission's plan): the drain, the volumes and the Node's removal see every pod, attachment and CSR of node3, page by page", async () => {
    const whole = run(['--check'], dflt);
    const one = await requestsOf(() => run(['--check'], paged('1')));
    expect(one.result.code, one.result.stderr).toBe(0);
    const actions = clusterActions(json<RunReport>(one.result, 'decom run --check'));
    expect(actions).toEqual(clusterActions(json<RunReport>(whole, 'decom run --check')));
    // What kubectl says is there, each in the plan.
    const podsOfNode3 = ok('get', 'pods', '-A', '--field-selector', 'spec.nodeName=node3', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}').split('\n').filter(Boolean);
    const workloads = podsOfNode3.filter((p) => !/\/(calico-node|kube-proxy)-/.test(p));
    expect(workloads.length).toBeGreaterThan(1);
    const drain = actions.find((a) => a.startsWith('drain: '))!;
    for (const p of workloads) expect(drain).toContain(`evict pod ${p} `);
    const attachments = ok('get', 'volumeattachments', '-o', 'jsonpath={range .items[?(@.spec.nodeName=="node3")]}{.metadata.name}{"\\n"}{end}').split('\n').filter(Boolean);
    expect(attachments).toContain('csi-node3-extra');
    expect(attachments.length).toBeGreaterThan(1);
    // The volumes step waits for what the drain moves (db's RWO volume, named by its PV), and names every other attachment with its state.
    const volumes = actions.find((a) => a.startsWith('volumes: '))!;
    const removal = actions.find((a) => a.startsWith('delete-node: '))!;
    const warned = json<RunReport>(one.result, 'decom run --check').hosts.find((h) => h.host === 'node3')!.warnings ?? [];
    expect(volumes).toMatch(/^volumes: wait for PV pv-db-data \(claim default\/db-data of pod default\/db-\S+, ReadWriteOnce, driver csi\.sandbox\.decom\.io\) to detach from Node node3$/);
    // The planted one: no pod uses it, so the attach/detach controller deleted it, and no attacher of its driver removes the finalizer.
    expect(warned).toContainEqual(expect.stringMatching(/^VolumeAttachment csi-node3-extra: PV pv-csi-node3-extra \(gone\), claim unknown, driver ebs\.csi\.aws\.com, detaching since \S+ \(held by its finalizer external-attacher\/ebs-csi-aws-com\); its PV is gone: not waited for, it goes with the Node$/));
    for (const va of attachments) expect(removal).toContain(`delete VolumeAttachment ${va} `);
    for (const csr of ['node-csr-node3-a', 'node-csr-node3-b']) expect(removal).toContain(`delete CertificateSigningRequest ${csr} (the kubelet's of node3)`);
    // Paged: every list asked for one object at a time, and each of these lists was read past its first page.
    const pages = pagesByList(one.lists);
    expect(one.lists.every((u) => u.searchParams.get('limit') === '1')).toBe(true);
    const continued = (key: string) => (pages.get(key) ?? []).filter(([, token]) => token !== null).length;
    expect(continued('/api/v1/pods fieldSelector=spec.nodeName=node3')).toBeGreaterThanOrEqual(podsOfNode3.length - 1);
    expect(continued('/api/v1/nodes')).toBeGreaterThanOrEqual(5);
    expect(continued('/apis/storage.k8s.io/v1/volumeattachments')).toBeGreaterThanOrEqual(countOf('volumeattachments') - 1);
    expect(continued('/apis/certificates.k8s.io/v1/certificatesigningrequests')).toBeGreaterThanOrEqual(countOf('csr') - 1);
  });

  it('decom verify with the kubeconfig: the registered Node reported alike; it reads each Node by name, so it has no list to page', async () => {
    const verify = (o: { env: NodeJS.ProcessEnv }) => decom(['verify', INVENTORY, 'node2', '--output', 'json'], o);
    type Verified = { hosts: { host: string; findings: { kind: string; subject: string; detail: string }[] }[] };
    const nodeObject = (r: Verified) => r.hosts.flatMap((h) => h.findings.filter((f) => f.kind === 'node-object').map((f) => `${h.host} ${f.subject} ${f.detail}`));
    const whole = json<Verified>(verify(dflt), 'decom verify');
    const one = await requestsOf(() => verify(paged('1')));
    const report = json<Verified>(one.result, 'decom verify');
    expect(nodeObject(report)).toEqual(nodeObject(whole));
    expect(nodeObject(report)).toEqual([expect.stringMatching(/^node2 node2 Node still registered at https:\/\/\S+ \(Ready=True\)$/)]);
    expect(report.hosts[0]!.findings.map((f) => f.kind).sort()).toEqual(whole.hosts[0]!.findings.map((f) => f.kind).sort());
    expect(one.lists).toEqual([]);
    expect(one.gets.map((u) => u.pathname)).toContain('/api/v1/nodes/node2');
  });

  it('a bad DECOM_LIST_PAGE_SIZE is bad input for the commands that list: exit 2, the variable named, nothing asked of the API', async () => {
    for (const bad of ['0', 'ten', '2.5']) {
      const message = `decom: DECOM_LIST_PAGE_SIZE ${JSON.stringify(bad)}: expected a whole number of at least 1 (the items per page of the API's lists; default 500)`;
      const a = await requestsOf(() => decom(['audit', INVENTORY, '--output', 'json'], paged(bad)));
      expect([a.result.code, a.result.stderr.trim(), a.result.stdout]).toEqual([2, message, '']);
      const r = await requestsOf(() => run(['--check'], paged(bad)));
      expect([r.result.code, r.result.stderr.trim(), r.result.stdout]).toEqual([2, message, '']);
      expect([...a.lists, ...a.gets, ...r.lists, ...r.gets]).toEqual([]);
    }
  });

  it('decom run --tags drain, for real, pages of two: every pod the plan named is evicted, node3 keeps only its DaemonSet pods', async () => {
    // (The verify step runs whatever the tags: node3 is a live node, its residue fails the run; the drain is what is asserted.)
    const plan = clusterActions(json<RunReport>(run(['--check', '--tags', 'drain'], dflt), 'decom run --check')).find((a) => a.startsWith('drain: '))!;
    const planned = [...plan.matchAll(/evict pod (\S+)/g)].map((m) => m[1]!).sort();
    expect(planned.length).toBeGreaterThan(1);
    const two = await requestsOf(() => run(['--tags', 'drain'], paged('2')));
    const drain = json<RunReport>(two.result, 'decom run').hosts[0]!.steps.find((s) => s.name === 'drain')!;
    expect([drain.status, drain.reason], two.result.stderr).toEqual(['changed', undefined]);
    expect(drain.actions.map((a) => a.what).filter((w) => w.startsWith('evict pod ')).map((w) => w.split(' ')[2]!).sort()).toEqual(planned);
    const left = ok('get', 'pods', '-A', '--field-selector', 'spec.nodeName=node3', '-o', 'jsonpath={range .items[*]}{.metadata.name}{"\\n"}{end}').split('\n').filter(Boolean);
    expect(left.filter((p) => !/^(calico-node|kube-proxy)-/.test(p))).toEqual([]);
    const pods = pagesByList(two.lists).get('/api/v1/pods fieldSelector=spec.nodeName=node3') ?? [];
    expect(pods.every(([limit]) => limit === '2')).toBe(true);
    expect(pods.filter(([, token]) => token !== null).length).toBeGreaterThan(0);
  });
});

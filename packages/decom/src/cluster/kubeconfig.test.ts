// Where decom's API access comes from (src/cluster/kubeconfig.ts): one source (--kubeconfig, else
// the inventory's decom_kubeconfig, else kubectl's own search; --context), and everything built
// from it (the clients, the Node check, the operator's CA) honours both the file and the
// context. Pure: temp kubeconfigs, and API servers on loopback in this process.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KUBECONFIG_FILES_ORDER, KUBECONFIG_ORDER, apiSource, findApi, kubeClients, kubeconfigFiles, kubeconfigOrder, operatorIdentity, type ApiSource, type KubeconfigPlace } from './kubeconfig.js';
import { registeredNodes } from './node.js';
import { UserError } from '../util/errors.js';
import { tempDir } from '../../test/helpers/temp.js';

const dir = tempDir('decom-kubeconfig-unit-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, text: string): string => {
  const f = join(dir, name);
  mkdirSync(join(f, '..'), { recursive: true });
  writeFileSync(f, text);
  return f;
};
/** A PEM certificate whose body is `body` (the rules compare bodies, never parse them). */
const pem = (body: string) => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`;
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** Two clusters: context a (current) is another cluster, context b this one. */
const twoContexts = file(
  'two/config',
  `apiVersion: v1
kind: Config
clusters:
- name: other
  cluster: {server: "https://other.example:6443", certificate-authority-data: ${b64(pem('T1RIRVI='))}}
- name: this
  cluster: {server: "https://this.example:6443", certificate-authority-data: ${b64(pem('VEhJUw=='))}}
users:
- name: u
  user: {token: t}
contexts:
- name: a
  context: {cluster: other, user: u}
- name: b
  context: {cluster: this, user: u}
current-context: a
`,
);

/** The environment kubectl's search reads, set per test and put back after. */
let saved: { KUBECONFIG?: string; HOME?: string };
beforeEach(() => {
  saved = { KUBECONFIG: process.env.KUBECONFIG, HOME: process.env.HOME };
  process.env.HOME = join(dir, 'nohome');
  delete process.env.KUBECONFIG;
});
afterEach(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const host = (vars: Record<string, unknown> = {}) => ({ vars });

describe('apiSource: --kubeconfig, else the inventory\'s decom_kubeconfig, else kubectl\'s search; and --context', () => {
  it('takes the flag over the inventory, the inventory over nothing, and passes the context on', () => {
    const inv = file('inv/config', 'apiVersion: v1\nkind: Config\n');
    expect(apiSource('hosts.yaml', [host({ decom_kubeconfig: inv })], { kubeconfig: twoContexts, context: 'b' })).toEqual({ kubeconfig: twoContexts, context: 'b' });
    expect(apiSource('hosts.yaml', [host({ decom_kubeconfig: inv }), host()], {})).toEqual({ inventoryKubeconfig: inv });
    expect(apiSource('hosts.yaml', [host()], { context: 'b' })).toEqual({ context: 'b' });
    expect(apiSource('hosts.yaml', [host()], {})).toEqual({});
    // --kubeconfig overrides the inventory: its hosts' disagreement is then not asked about.
    expect(apiSource('hosts.yaml', [host({ decom_kubeconfig: inv }), host({ decom_kubeconfig: twoContexts })], { kubeconfig: twoContexts })).toEqual({ kubeconfig: twoContexts });
  });

  it('refuses, in one line naming the flag or the file, a file that does not exist and hosts that name two clusters', () => {
    const missing = join(dir, 'missing');
    expect(() => apiSource('hosts.yaml', [host()], { kubeconfig: missing })).toThrow(new UserError(`--kubeconfig ${missing}: no such file`));
    expect(() => apiSource('hosts.yaml', [host({ decom_kubeconfig: missing })], {})).toThrow(`hosts.yaml: decom_kubeconfig ${missing}: no such file`);
    expect(() => apiSource('hosts.yaml', [host({ decom_kubeconfig: twoContexts }), host({ decom_kubeconfig: missing })], {})).toThrow(/hosts\.yaml: the hosts name different clusters in decom_kubeconfig/);
  });

  it("without a file of its own, the files kubectl would load: $KUBECONFIG's existing ones, else ~/.kube/config", () => {
    expect(kubeconfigFiles({})).toEqual([]);
    const home = file('home/.kube/config', 'apiVersion: v1\nkind: Config\n');
    process.env.HOME = join(dir, 'home');
    expect(kubeconfigFiles({})).toEqual([home]);
    process.env.KUBECONFIG = `${join(dir, 'missing')}:${twoContexts}:${home}`;
    expect(kubeconfigFiles({})).toEqual([twoContexts, home]);
    expect(kubeconfigFiles({ kubeconfig: home, context: 'x' })).toEqual([home]);
  });
});

describe('findApi walks KUBECONFIG_ORDER: each place is used only when every place before it holds nothing', () => {
  /** A kubeconfig at each file place, and how to empty that place again. */
  function everyPlace(): { source: ApiSource; files: Record<Exclude<KubeconfigPlace, "the pod's service account">, string>; empty: (p: KubeconfigPlace) => void } {
    const files = {
      '--kubeconfig': file('order/flag', 'apiVersion: v1\nkind: Config\n'),
      "the inventory's decom_kubeconfig": file('order/inventory', 'apiVersion: v1\nkind: Config\n'),
      $KUBECONFIG: file('order/env', 'apiVersion: v1\nkind: Config\n'),
      '~/.kube/config': file('order/home/.kube/config', 'apiVersion: v1\nkind: Config\n'),
    };
    const source: ApiSource = { kubeconfig: files['--kubeconfig'], inventoryKubeconfig: files["the inventory's decom_kubeconfig"] };
    process.env.KUBECONFIG = files.$KUBECONFIG;
    process.env.HOME = join(dir, 'order', 'home');
    const empty = (p: KubeconfigPlace) => {
      if (p === '--kubeconfig') delete source.kubeconfig;
      else if (p === "the inventory's decom_kubeconfig") delete source.inventoryKubeconfig;
      else if (p === '$KUBECONFIG') delete process.env.KUBECONFIG;
      else if (p === '~/.kube/config') process.env.HOME = join(dir, 'nohome');
    };
    return { source, files, empty };
  }

  it('finds the first place of the order that holds a kubeconfig, in the order the constant lists them', () => {
    const { source, files, empty } = everyPlace();
    for (const place of KUBECONFIG_FILES_ORDER) {
      const f = findApi(source);
      expect(f?.place).toBe(place);
      expect(f?.held).toEqual({ files: [files[place as keyof typeof files]] });
      expect(kubeconfigFiles(source)).toEqual([files[place as keyof typeof files]]);
      empty(place);
    }
    // Outside a pod the last place holds nothing: no API at all.
    expect(findApi(source)).toBeUndefined();
    expect(kubeconfigFiles(source)).toEqual([]);
  });

  it("the pod's service account comes last, and verify's order (the file places) leaves it out", () => {
    expect(KUBECONFIG_ORDER.at(-1)).toBe("the pod's service account");
    expect(KUBECONFIG_FILES_ORDER).toEqual(KUBECONFIG_ORDER.filter((p) => p !== "the pod's service account"));
  });
});

describe("operatorIdentity: the CA and server of the context in use, from the files the clients load", () => {
  it('the current context, or --context', async () => {
    expect(await operatorIdentity({ kubeconfig: twoContexts })).toEqual({ caBodies: ['T1RIRVI='], servers: ['https://other.example:6443'] });
    expect(await operatorIdentity({ kubeconfig: twoContexts, context: 'b' })).toEqual({ caBodies: ['VEhJUw=='], servers: ['https://this.example:6443'] });
  });

  it('a --context no file has is refused in one line naming it and the contexts there are; nothing to read: undefined', async () => {
    await expect(operatorIdentity({ kubeconfig: twoContexts, context: 'c' })).rejects.toThrow(new UserError(`--context c: no such context in ${twoContexts} (it has a, b)`));
    expect(await operatorIdentity({})).toBeUndefined();
    await expect(operatorIdentity({ context: 'b' })).rejects.toThrow(new UserError(`--context b: no kubeconfig was found to look for it in (${kubeconfigOrder()})`));
  });

  it("$KUBECONFIG's files merged as kubectl merges them: the first current context and the first of each name win; a CA file is relative to its own kubeconfig", async () => {
    // The first file sets the current context, b, which only the second defines; the second's own current context (a) loses.
    const first = file('merge/first', 'apiVersion: v1\nkind: Config\ncurrent-context: b\nclusters:\n- name: this\n  cluster: {server: "https://first.example:6443"}\n');
    file('merge/sub/ca.crt', pem('U1VC'));
    const second = file(
      'merge/sub/second',
      'apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters:\n- name: this\n  cluster: {server: "https://second.example:6443"}\n- name: other\n  cluster: {server: "https://other.example:6443", certificate-authority: ca.crt}\n' +
        'contexts:\n- name: a\n  context: {cluster: other}\n- name: b\n  context: {cluster: this}\n',
    );
    process.env.KUBECONFIG = `${first}:${second}`;
    expect(await operatorIdentity({})).toEqual({ caBodies: [], servers: ['https://first.example:6443'] });
    expect(await operatorIdentity({ context: 'a' })).toEqual({ caBodies: ['U1VC'], servers: ['https://other.example:6443'] });
    await expect(operatorIdentity({ context: 'c' })).rejects.toThrow(`--context c: no such context in ${first}+${second} (it has a, b)`);
    // The source's own file wins over $KUBECONFIG.
    expect(await operatorIdentity({ kubeconfig: twoContexts })).toEqual({ caBodies: ['T1RIRVI='], servers: ['https://other.example:6443'] });
    // Nothing named: ~/.kube/config (with $KUBECONFIG unset).
    delete process.env.KUBECONFIG;
    file('h2/.kube/config', 'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "https://home.example:6443"}\ncontexts:\n- name: h\n  context: {cluster: c}\ncurrent-context: h\n');
    process.env.HOME = join(dir, 'h2');
    expect(await operatorIdentity({})).toEqual({ caBodies: [], servers: ['https://home.example:6443'] });
  });
});

describe('kubeClients and registeredNodes: the context in use, not the current one', () => {
  let servers: Server[] = [];
  afterEach(() => {
    for (const s of servers) s.close();
    servers = [];
  });
  /** An API on loopback where only `node` is registered. */
  async function api(node: string): Promise<string> {
    const s = createServer((req, res) => {
      const found = req.url === `/api/v1/nodes/${node}`;
      res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(found ? { kind: 'Node', apiVersion: 'v1', metadata: { name: node }, status: { conditions: [{ type: 'Ready', status: 'True' }] } } : { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }));
    });
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  }
  const kubeconfig = (name: string, a: string, b: string) =>
    file(
      name,
      `apiVersion: v1\nkind: Config\nclusters:\n- name: ca\n  cluster: {server: "${a}", insecure-skip-tls-verify: true}\n- name: cb\n  cluster: {server: "${b}", insecure-skip-tls-verify: true}\n` +
        'users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: a\n  context: {cluster: ca, user: u}\n- name: b\n  context: {cluster: cb, user: u}\ncurrent-context: a\n',
    );

  it('asks the server of --context, and the current context without it', async () => {
    const [a, b] = [await api('node2'), await api('node1')];
    const kc = kubeconfig('nodes/config', a, b);
    const withB = await registeredNodes({ kubeconfig: kc, context: 'b' }, ['node1', 'node2']);
    expect([...withB.findings]).toEqual([['node1', [{ kind: 'node-object', subject: 'node1', detail: `Node still registered at ${b} (Ready=True)` }]]]);
    expect([...withB.warnings]).toEqual([]);
    const current = await registeredNodes({ kubeconfig: kc }, ['node1', 'node2']);
    expect([...current.findings]).toEqual([['node2', [{ kind: 'node-object', subject: 'node2', detail: `Node still registered at ${a} (Ready=True)` }]]]);
    // $KUBECONFIG, merged, with the context.
    process.env.KUBECONFIG = kc;
    expect([...(await registeredNodes({ context: 'b' }, ['node1'])).findings.keys()]).toEqual(['node1']);
  });

  it('a context it cannot use costs the check (a warning naming it), and nothing to load says nothing', async () => {
    const kc = kubeconfig('bad/config', 'http://127.0.0.1:1', 'http://127.0.0.1:1');
    const r = await registeredNodes({ kubeconfig: kc, context: 'c' }, ['node1']);
    expect(r.warnings.get('node1')).toEqual([`could not ask the API for its Node object: --context c: no such context in ${kc} (it has a, b)`]);
    const down = await registeredNodes({ kubeconfig: kc }, ['node1']);
    expect(down.warnings.get('node1')?.[0]).toMatch(/^could not ask http:\/\/127\.0\.0\.1:1 for its Node object: /);
    expect(await registeredNodes({}, ['node1'])).toEqual({ findings: new Map(), warnings: new Map() });
  });

  it('every client, the APIServices\' included, from the one builder', async () => {
    const b = await api('node1');
    const kube = await kubeClients({ kubeconfig: kubeconfig('clients/config', 'http://127.0.0.1:1', b), context: 'b' });
    expect(kube?.server).toBe(b);
    expect(Object.keys(kube ?? {}).sort()).toEqual(['apps', 'certificates', 'coordination', 'core', 'get', 'policy', 'registration', 'server', 'storage']);
    expect((await kube!.core.readNode({ name: 'node1' })).metadata?.name).toBe('node1');
    expect(await kubeClients({})).toBeUndefined();
  });
});

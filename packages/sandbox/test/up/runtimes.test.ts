/**
 * The container runtime each sandbox node runs: containerd 2 by default, 1.7 and 1.6
 * when asked for, one per node in turn, each node its own binaries and the host's
 * packages untouched. Judged by what containerd itself answers: CRI Version over its
 * socket, the Node's containerRuntimeVersion (the kubelet's copy of it) through the
 * tests' kubectl 1.36 and the machine image's 1.32.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECKOUT, decom, down, ssh, up } from '../../../decom/test/helpers/sandbox.js';
import { KUBECTL, MACHINE_KUBECTL, kubectlWith, requireKubectl } from '../../../decom/test/helpers/kubectl.js';

/** containerd's answer to CRI Version, asked on the node with decom's own CRI client. */
function criVersion(node: string): { name: string; version: string; apiVersion: string } {
  const client = join(CHECKOUT, 'packages/decom/dist/cri/client.js');
  const script = `import { CriClient, unixDial, CONTAINERD_SOCKET } from '${client}';
const c = await CriClient.connect(unixDial(CONTAINERD_SOCKET));
console.log(JSON.stringify({ ...c.runtime, api: c.apiVersion }));
await c.close();`;
  return JSON.parse(ssh(node, `node --input-type=module -e "${script.replaceAll('"', '\\"').replaceAll('$', '\\$')}"`)) as ReturnType<typeof criVersion>;
}

/** Each Node's containerRuntimeVersion, as a kubectl prints it. */
function nodeRuntimes(kubectl: string): Record<string, string> {
  const r = kubectlWith(kubectl, 'get', 'nodes', '-o', 'jsonpath={range .items[*]}{.metadata.name} {.status.nodeInfo.containerRuntimeVersion}{"\\n"}{end}');
  expect(r.code, r.err).toBe(0);
  return Object.fromEntries(r.out.trim().split('\n').map((l) => l.split(' ') as [string, string]));
}

interface StatusNode { name: string; init: string; runtime: { family: string; containerd: string; source: string; cni: string } }
const status = (): StatusNode[] => JSON.parse(decom(['sandbox', 'status', '--output', 'json']).stdout).nodes;

const hostContainerd = () => execFileSync('/usr/bin/containerd', ['--version'], { encoding: 'utf8' }).trim();

describe('a sandbox with no --containerd runs containerd 2 on every node', () => {
  const host = hostContainerd();
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '2', '--api']);
  });
  afterAll(() => down());

  it('CRI Version on every node says containerd 2.x, on CRI runtime.v1; the Node says so to kubectl 1.36', () => {
    const nodes = nodeRuntimes(KUBECTL);
    for (const n of status()) {
      const cri = criVersion(n.name);
      console.log(`${n.name}: CRI Version: ${cri.name} ${cri.version} (${cri.apiVersion}); Debian package ${n.runtime.containerd} from ${n.runtime.source}, CNI plugins ${n.runtime.cni}`);
      expect(cri.name).toBe('containerd');
      expect(cri.version).toMatch(/^v?2\.\d+\.\d+/);
      expect(cri).toMatchObject({ apiVersion: 'v1', api: 'v1' });
      expect(n.runtime).toMatchObject({ family: '2', containerd: expect.stringMatching(/^2\.\d+\.\d+/), cni: expect.stringMatching(/^1\.9\./) });
      expect(nodes[n.name]).toMatch(/^containerd:\/\/2\.\d+\.\d+$/);
      // The node's own files: the 2.x binaries and unit, kubespray's version 3 config; the CNI plugins it was given.
      expect(ssh(n.name, 'containerd --version; ctr --version')).toMatch(/containerd\/v2 2\.\d+\.\d+[\s\S]*ctr github\.com\/containerd\/containerd\/v2 2\./);
      expect(ssh(n.name, 'head -n1 /etc/containerd/config.toml')).toBe('version = 3\n');
      expect(ssh(n.name, 'grep -c "io.containerd.cri.v1.runtime" /etc/containerd/config.toml').trim()).not.toBe('0');
    }
    // The host still runs its own: nothing was installed over Debian 12's package.
    expect(hostContainerd()).toBe(host);
  });

  it("the machine image's kubectl 1.32 reads the same Nodes", () => {
    const old = kubectlWith(MACHINE_KUBECTL, 'version', '--client');
    expect(old.out).toMatch(/Client Version: v1\.32\./);
    expect(nodeRuntimes(MACHINE_KUBECTL)).toEqual(nodeRuntimes(KUBECTL));
    const ours = kubectlWith(KUBECTL, 'version', '--client');
    console.log(`kubectl: ${ours.out.split('\n')[0]} (the tests'), ${old.out.split('\n')[0]} (the machine image's)`);
    expect(ours.out).toMatch(/Client Version: v1\.3[6-9]\./);
  });
});

describe('--containerd 1.7,1.6,2 --init none: one version per node, in turn', () => {
  beforeAll(() => {
    requireKubectl();
    up(['--nodes', '3', '--api', '--containerd', '1.7,1.6,2', '--init', 'none']);
  });
  afterAll(() => down());

  it('each node runs its own containerd, CRI Version and the Node agree, and 1.x nodes get a version 2 config', () => {
    const nodes = nodeRuntimes(KUBECTL);
    const want = { node1: ['1.7', /^v?1\.7\.\d+/], node2: ['1.6', /^v?1\.6\.\d+/], node3: ['2', /^v?2\.\d+\.\d+/] } as const;
    for (const n of status()) {
      const [family, version] = want[n.name as keyof typeof want];
      const cri = criVersion(n.name);
      console.log(`${n.name}: CRI Version: ${cri.name} ${cri.version} (${cri.apiVersion}); Debian package ${n.runtime.containerd} from ${n.runtime.source}, CNI plugins ${n.runtime.cni}`);
      expect(n.runtime.family).toBe(family);
      expect(cri.version).toMatch(version);
      expect(nodes[n.name]).toBe(`containerd://${cri.version.replace(/^v/, '').replace(/[~+].*$/, '')}`);
      expect(ssh(n.name, 'head -n1 /etc/containerd/config.toml')).toBe(family === '2' ? 'version = 3\n' : 'version = 2\n');
    }
    const byName = Object.fromEntries(status().map((n) => [n.name, n.runtime]));
    // 1.6 is this host's Debian 12 package, with Debian 12's plugins; 1.7 comes with the newer plugins.
    expect(byName.node2).toMatchObject({ source: "this host's Debian 12 package", cni: expect.stringMatching(/^1\.1\.1/) });
    expect(byName.node1).toMatchObject({ source: 'Debian trixie', cni: expect.stringMatching(/^1\.9\./) });
  });
});

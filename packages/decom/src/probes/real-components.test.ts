/**
 * Parsers and plans against what real components printed and left (the recordings
 * in fixtures/real-cri: containerd 1.6.20's CRI, crictl v1.32.0, Debian's CNI plugins
 * 1.1.1), and against crictl's older JSON as cri-tools wrote it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { emptyState, type NodeState } from './index.js';
import { mergeCniNat, sandboxNetns, parseCrictl, parseIptablesSave } from './parse.js';
import { stopSandboxes } from '../engine/model.js';
import { STEPS } from '../steps/index.js';
import type { StepContext } from '../engine/step.js';

const recording = readFileSync(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'real-cri', 'cgroupfs-live.txt'), 'utf8');
const section = (name: string) => {
  const start = recording.indexOf(`== ${name}\n`);
  const rest = recording.slice(start + name.length + 4);
  return rest.slice(0, rest.search(/^== /m));
};

/** The recorded `crictl pods -o json` / `ps -a -o json` items (v1.32: protojson). */
const podItem = JSON.parse(section('crictl pods -o json (first item)'));
const containerItem = JSON.parse(section('crictl ps -a -o json (first item)'));
/** The other pods of the same node, from crictl's table and ctr's full ids. */
const fullId = (short: string) => (/^([0-9a-f]{64})\s/m.exec(section('ctr -n k8s.io containers ls').split('\n').find((l) => l.startsWith(short)) ?? '')?.[1] as string);
const tablePods = section('crictl pods').split('\n').slice(1).filter(Boolean).map((l) => l.split(/\s{2,}/));
const tableContainers = section('crictl ps -a').split('\n').slice(1).filter(Boolean).map((l) => l.split(/\s{2,}/));
const pods = tablePods.map(([id = '', , , name, namespace]) =>
  fullId(id) === podItem.id ? podItem : { ...podItem, id: fullId(id), metadata: { ...podItem.metadata, name, namespace, uid: `uid-of-${name}` }, labels: {} },
);
const containers = tableContainers.map(([id = '', , , , name, , podId = '']) =>
  fullId(id) === containerItem.id ? containerItem : { ...containerItem, id: fullId(id), podSandboxId: fullId(podId), metadata: { name, attempt: 0 }, labels: {} },
);

/**
 * crictl up to v1.30 printed the same messages with gogo's jsonpb (cri-tools v1.30.0,
 * cmd/crictl/util.go protobufObjectToJSON: `jsonpb.Marshaler{EmitDefaults: true, Indent: "  "}`):
 * camelCase names, enums by name, int64 as strings, two-space indent, and no `imageId`
 * (added to the Container message later; v1.31 moved to protojson).
 */
const jsonpb = (o: unknown) => JSON.stringify(o, (k, v) => (k === 'imageId' || k === 'userSpecifiedImage' ? undefined : v), 2);

const ctx: StepContext = { runId: 'R', backupDir: '/b', host: 'n30', vars: {}, params: {}, operatorBackupDir: '/o', before: new Set() };
const withCrictl = (c: NodeState['containers']): NodeState => ({
  ...emptyState(),
  hostname: 'n30',
  tools: new Set(['crictl', 'ctr']),
  crictl: { endpoint: 'unix:///run/containerd/containerd.sock', runtime: 'containerd' },
  processes: new Map([[100, { pid: 100, ppid: 1, name: 'containerd', args: '/usr/bin/containerd', start: 1 }]]),
  containers: c,
});

describe('crictl on a node: plans from its real JSON', () => {
  for (const [version, podsJson, containersJson] of [
    ['v1.32 (protojson, recorded)', JSON.stringify({ items: pods }, null, 1), JSON.stringify({ containers }, null, 1)],
    ['v1.30 (jsonpb)', jsonpb({ items: pods }), jsonpb({ containers })],
  ] as const) {
    it(`${version}: every pod stopped and removed once, no crictl rm of containers a removed sandbox took with it`, () => {
      const parsed = parseCrictl(podsJson, containersJson);
      expect(parsed.filter((c) => c.kind === 'sandbox')).toHaveLength(3);
      expect(parsed.filter((c) => c.kind === 'container').every((c) => c.sandboxId && pods.some((p) => p.id === c.sandboxId))).toBe(true);
      const actions = STEPS.containers!.plan(withCrictl(parsed), ctx);
      expect(actions).toHaveLength(1);
      const ids = pods.map((p) => `'${p.id}'`).join(' ');
      expect(actions[0]!.script).toBe(`crictl stopp -- ${ids}; crictl rmp -f -- ${ids}`);
      expect(actions.some((a) => /crictl rm /.test(a.script))).toBe(false);
    });
  }

  it('removes with crictl rm only a container whose sandbox is gone', () => {
    const orphan = { ...containerItem, id: 'f'.repeat(64), podSandboxId: 'e'.repeat(64) };
    const parsed = parseCrictl(JSON.stringify({ items: pods }), JSON.stringify({ containers: [...containers, orphan] }));
    const actions = STEPS.containers!.plan(withCrictl(parsed), ctx);
    expect(actions.map((a) => a.script).filter((s) => s.startsWith('crictl rm '))).toEqual([`crictl rm -f -- '${'f'.repeat(64)}'`]);
  });
});

describe("what a sandbox's CNI DEL removes", () => {
  const nat = section('iptables (nft) CNI/KUBE')
    .split('\n')
    // The recording cut this line short; its target is the one CNI-DN chain declared above.
    .map((l) => l.replace(/-j CNI-DN-53160d35c$/, '-j CNI-DN-53160d35c6cdfbc579075'));
  const tables = parseIptablesSave(['*nat', ':PREROUTING ACCEPT [0:0]', ':OUTPUT ACCEPT [0:0]', ':POSTROUTING ACCEPT [0:0]', ...nat, 'COMMIT'].join('\n'), 'nft', 4);
  const web = '876ea24aabad7c5ab79ffdcf6d3190337b38db55a1632e43ae6b37b6ac0c945a';
  const coredns = '0786bfdfdd0476ad58ef4344ffc5631f92cf6db7389b9d04ffb0d88da2a5c34b';

  it('reads the netns of each task bundle', () => {
    const b = '/run/containerd/io.containerd.runtime.v2.task/k8s.io';
    expect(sandboxNetns(`${b}/${web}/config.json:"type":"network","path":"/var/run/netns/cni-d091425f-bc84-b970-f87e-27dad0ec7c4f"\n${b}/${coredns}/config.json:"io.kubernetes.cri.container-type":"sandbox"`)).toEqual(
      new Map([[web, 'cni-d091425f-bc84-b970-f87e-27dad0ec7c4f']]),
    );
  });

  it("reads a stopped sandbox's netns from its containerd record (`ctr containers info`, as the probe's grep -o prints it), not a container's /proc path", () => {
    const info = `@${coredns}
"io.kubernetes.cri.container-type": "sandbox"
"path": "/var/run/netns/cni-4b8e2f1a-6c3d-9e7f-0a1b-2c3d4e5f6a7b"
@${web}
"io.kubernetes.cri.container-type": "container"`;
    expect(sandboxNetns('', info)).toEqual(new Map([[coredns, 'cni-4b8e2f1a-6c3d-9e7f-0a1b-2c3d4e5f6a7b']]));
  });

  it('--check predicts it: per-pod chains and the rules naming the sandbox go, portmap\'s shared chains, netns and veths of other pods stay', () => {
    const s: NodeState = {
      ...emptyState(),
      iptables: tables,
      netns: ['cni-web', 'cni-other'],
      mounts: [{ target: '/run/netns/cni-web', source: 'nsfs', fstype: 'nsfs' }, { target: '/run/netns/cni-other', source: 'nsfs', fstype: 'nsfs' }],
      links: [{ name: 'veth1', master: 'cni0', peerNetns: 'cni-web' }, { name: 'veth2', master: 'cni0', peerNetns: 'cni-other' }, { name: 'cni0' }],
      paths: [{ kind: 'cni-state', path: '/var/lib/cni/networks/containerd-net/10.244.30.2' }],
      pods: { ...emptyState().pods, leases: [{ file: '/var/lib/cni/networks/containerd-net/10.244.30.2', network: 'containerd-net', ip: '10.244.30.2', sandbox: web }] },
    };
    const after = stopSandboxes(s, [{ id: web, runtime: 'containerd', kind: 'sandbox', netns: 'cni-web' }]);
    const t = after.iptables[0]!;
    expect(t.chains.filter((c) => c.startsWith('CNI-'))).toEqual(['CNI-32865588763f3e6f6308a946', 'CNI-HOSTPORT-DNAT', 'CNI-HOSTPORT-MASQ', 'CNI-HOSTPORT-SETMARK']);
    expect(t.rules.some((r) => r.spec.includes(web))).toBe(false);
    expect(t.rules.filter((r) => r.spec.includes(coredns))).toHaveLength(3);
    expect(after.netns).toEqual(['cni-other']);
    expect(after.mounts.map((m) => m.target)).toEqual(['/run/netns/cni-other']);
    expect(after.links.map((l) => l.name)).toEqual(['veth2', 'cni0']);
    expect(after.paths).toEqual([]);
  });

  it('the nat chains read again after the teardown replace what the full dump said of them', () => {
    // What `cni-nat` prints once both pods' DEL ran: portmap's shared chains only.
    const again = [
      '#family 4',
      '# Warning: iptables-legacy tables present, use iptables-legacy to see them',
      '-P PREROUTING ACCEPT',
      '-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT',
      '-P OUTPUT ACCEPT',
      '-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT',
      '-P POSTROUTING ACCEPT',
      '-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ',
      '-N CNI-HOSTPORT-SETMARK',
      '-A CNI-HOSTPORT-SETMARK -m comment --comment "CNI portfwd masquerade mark" -j MARK --set-xmark 0x2000/0x2000',
      '-N CNI-HOSTPORT-MASQ',
      '-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE',
      '-N CNI-HOSTPORT-DNAT',
      '#family 6',
      '-P PREROUTING ACCEPT',
      '-P OUTPUT ACCEPT',
      '-P POSTROUTING ACCEPT',
      '',
    ].join('\n');
    const filter = { backend: 'nft' as const, family: 4 as const, table: 'filter', chains: ['KUBE-FORWARD'], rules: [{ chain: 'FORWARD', spec: '-A FORWARD -j KUBE-FORWARD' }] };
    const merged = mergeCniNat([...tables, filter], again);
    expect(merged).toHaveLength(2); // no IPv6 nat table made up from iptables-nft's built-in chains
    const t = merged.find((x) => x.table === 'nat')!;
    expect(t.chains.filter((c) => c.startsWith('CNI-')).sort()).toEqual(['CNI-HOSTPORT-DNAT', 'CNI-HOSTPORT-MASQ', 'CNI-HOSTPORT-SETMARK']);
    expect(t.rules.map((r) => r.chain).sort()).toEqual(['CNI-HOSTPORT-MASQ', 'CNI-HOSTPORT-SETMARK', 'OUTPUT', 'POSTROUTING', 'PREROUTING']);
    expect(merged.find((x) => x.table === 'filter')).toEqual(filter);
  });
});

/** Probing a node: the probe script run in one exec over the host's transport, and its output parsed into a NodeState. */
import { randomBytes } from 'node:crypto';
import type { Transport } from '../transport/types.js';
import { TransportError } from '../transport/types.js';
import { ALL_VIEWS, installPaths, probeScript, statePaths, type View } from './script.js';
import { CONTAINERD_DEFAULTS, containerdPaths, type ContainerdPaths } from '../cri/containerd-config.js';
import {
  parseCertificates, parseCgroups, parseCrictl, parseKubeconfigs, parseCtr, parseDocker, parseDockerImages, parseEtcd, parseInstalled, parseIpvs, parseIptablesSave, parseLinks, parseManifests,
  json, sandboxNetns, mergeCniNat, parseContainerdArgs, parseContainerdFiles, parseEtcdDirs, parseFacts, parseCrictlEndpoint, parseRuntimes, parseKubeCgroups, parseMeta, parseMountinfo, parseNetns, parseLeases, parseNftTables, parsePaths, parsePodTraces, parseResolved, parseDns, parseProcs, parseRoutes, parseSs, parseSystemctlShow, splitSections,
} from './parse.js';
import type { NodeState } from './state.js';

export type { Container, NodeState, Proc } from './state.js';
export { ALL_VIEWS, AUDIT_VIEWS, NARROWER, PURGE_VIEWS, reprobedViews, VIEWS, withFacts, type View } from './script.js';
export type { NodeFacts } from './state.js';

/** A node with nothing on it: what a partial probe starts from (and what tests build on). */
export const emptyState = (): NodeState => ({ hostname: '', machineId: '', pid1: '', uid: 0, tools: new Set(), ...EMPTY() });

const EMPTY = (): Omit<NodeState, 'hostname' | 'machineId' | 'pid1' | 'uid' | 'tools'> => ({
  paths: [], resolved: new Map(), processes: new Map(), k8sCgroups: new Map(), listeners: [], mounts: [], netns: [], links: [], iptables: [],
  nftTables: [], ipvs: [], units: new Map(), runningUnits: new Set(), containers: [], runtimes: [], crictl: {}, kubeletHealthy: false, staticPods: [],
  clusterCAs: [], anchors: [], kubeconfigs: [], bundleTrusts: [], sysctl: [], etcdArchives: [], routes: [], ipsets: [], installed: [], images: [], imagesUnlisted: false, dockerImages: [],
  pods: { dirs: [], netnsInodes: new Map(), procNetns: new Map(), leases: [] },
  cgroups: { hierarchies: [], kube: [] }, iptablesDumps: [],
  containerd: CONTAINERD_DEFAULTS, etcdDirs: new Map(), facts: { runtimes: [], cniTypes: [] }, purge: false,
  dns: { files: [], backups: [], services: { networkManager: false, resolved: false, resolvedCanReload: false } },
});

/** The firewall view's iptables-save sections, by backend and family. */
const IPTABLES_SECTIONS = [
  { section: 'iptables-nft', backend: 'nft', family: 4 },
  { section: 'ip6tables-nft', backend: 'nft', family: 6 },
  { section: 'iptables-legacy', backend: 'legacy', family: 4 },
  { section: 'ip6tables-legacy', backend: 'legacy', family: 6 },
] as const;

/**
 * One probe run's sections as a NodeState. Pure. A partial probe (some views only)
 * updates `prev`: what it did not look at stays as `prev` saw it.
 */
export function stateFromSections(s: Map<string, string>, prev?: NodeState): NodeState {
  const get = (name: string) => s.get(name) ?? '';
  const has = (name: string) => s.has(name);
  const meta = parseMeta(get('meta'));
  const base: NodeState = prev ?? { ...meta, ...EMPTY() };
  const st: NodeState = { ...base, ...meta };
  if (has('facts')) st.facts = parseFacts(get('facts'));
  const daemon = parseContainerdArgs(get('containerd-args'), get('containerd-config'));
  // A running daemon keeps the paths it started with: its config changed on disk (a drop-in
  // the purge removed) says where the next start will look, not where this one does.
  const sameDaemon = daemon.daemon !== undefined && daemon.daemon === base.containerdDaemon;
  if (has('containerd-config') && !sameDaemon && !get('containerd-config').startsWith('#same')) {
    const { files } = parseContainerdFiles(get('containerd-config'));
    // How a config merges depends on the daemon's version, where the node said it (and decom can read it).
    const version = st.facts.runtimes.find((r) => r.name === 'containerd')?.version;
    const said = version && /^\d+\.\d+/.test(version) ? { version } : undefined;
    try {
      st.containerd = containerdPaths(files, daemon.flags, said);
      delete st.containerdConfigError;
    } catch (e) {
      // containerd itself would refuse this config: its command line and defaults are all decom can go by.
      st.containerd = containerdPaths([], daemon.flags);
      st.containerdConfigError = (e as Error).message;
    }
  }
  if (has('containerd-args')) {
    if (daemon.daemon) st.containerdDaemon = daemon.daemon;
    else delete st.containerdDaemon;
  }
  // Paths gone since keep their record: nothing deletes a path the probe no longer lists.
  if (has('resolved') || has('resolved-install')) st.resolved = new Map([...base.resolved, ...parseResolved(get('resolved')), ...parseResolved(get('resolved-install'))]);
  if (has('paths')) {
    st.paths = parsePaths(get('paths'));
    st.clusterCAs = parseCertificates(get('cluster-cas'));
    st.anchors = parseCertificates(get('anchors'));
    st.kubeconfigs = parseKubeconfigs(get('kubeconfigs'));
    st.bundleTrusts = get('bundle').split('\n').filter(Boolean);
    st.sysctl = get('sysctl').split('\n').filter(Boolean);
    st.etcdArchives = get('etcd-archives').split('\0').map((p) => p.replace(/^\n/, '')).filter((p) => p.startsWith('/'));
  } else {
    // A part of the files view (a step's narrower re-probe): the rest of it stands.
    if (has('anchors')) {
      st.clusterCAs = parseCertificates(get('cluster-cas'));
      st.anchors = parseCertificates(get('anchors'));
      st.bundleTrusts = get('bundle').split('\n').filter(Boolean);
    }
    if (has('manifest-paths')) st.paths = [...base.paths.filter((p) => p.kind !== 'static-pod-manifest'), ...parsePaths(get('manifest-paths'))];
  }
  if (has('dns')) st.dns = parseDns(get('dns'), get('dns-backups'), get('dns-services'));
  if (has('stat')) {
    st.processes = parseProcs(get('stat'), get('cmdline'));
    st.k8sCgroups = parseCgroups(get('cgroups'));
    st.etcdDirs = parseEtcdDirs(get('etcd-dirs'));
  }
  if (has('listen')) st.listeners = parseSs(get('listen'));
  if (has('mountinfo')) st.mounts = parseMountinfo(get('mountinfo'));
  if (has('netns')) st.netns = parseNetns(get('netns'));
  if (has('links')) {
    st.links = parseLinks(get('links'));
    st.routes = parseRoutes(get('routes'));
  }
  if (has('iptables-nft')) {
    st.iptables = IPTABLES_SECTIONS.flatMap((x) => parseIptablesSave(get(x.section), x.backend, x.family));
    // Kept as printed: the backup writes them, so the run saves the firewall once.
    st.iptablesDumps = IPTABLES_SECTIONS.map((x) => ({ backend: x.backend, family: x.family, text: get(x.section) }));
    st.nftTables = parseNftTables(get('nft-tables'));
    st.ipvs = parseIpvs(get('ipvs'));
    st.ipsets = get('ipsets').split('\n').map((l) => l.trim()).filter(Boolean);
  } else if (has('cni-nat')) {
    st.iptables = mergeCniNat(base.iptables, get('cni-nat'));
    // Part of the nft backend was read again: its dumps no longer show the node (the backup saves it afresh).
    st.iptablesDumps = base.iptablesDumps.filter((d) => d.backend !== 'nft');
  }
  if (has('installed')) {
    st.purge = true;
    st.installed = parseInstalled(get('installed'), get('installed-owners'), meta.tools);
    const images = get('images').split('\n').map((l) => l.trim()).filter(Boolean);
    st.imagesUnlisted = images.includes('#containerd-stopped');
    st.images = images.filter((l) => !l.startsWith('#'));
    st.dockerImages = parseDockerImages(get('docker-images'), base.dockerImages);
  }
  if (has('unit-cgroups')) {
    st.runningUnits = new Set(get('unit-cgroups').split('\n').filter(Boolean));
    st.units = parseSystemctlShow(get('systemd'));
  }
  if (has('task-bundles')) {
    st.crictl = parseCrictlEndpoint(get('crictl-endpoint'), st.containerd.address);
    // crictl's objects are containerd's only where crictl talks to containerd (on a cri-dockerd node they are Docker's, listed below).
    // …and only when both its answers are whole JSON (cut off by its timeout, they say nothing).
    const crictl = meta.tools.has('crictl') && st.crictl.runtime === 'containerd' && json(get('crictl-pods')) !== undefined && json(get('crictl-containers')) !== undefined;
    const netns = sandboxNetns(get('task-bundles'), get('ctr-info'));
    const cd = crictl
      ? parseCrictl(get('crictl-pods'), get('crictl-containers'))
      : parseCtr(get('ctr-containers'), get('task-bundles'), st.processes, get('ctr-info'));
    st.containers = [...cd.map((c) => (netns.has(c.id) ? { ...c, netns: netns.get(c.id) as string } : c)), ...parseDocker(get('docker'))];
    const answered = (section: string) => get(section).split('\n').includes('#answered');
    st.runtimes = parseRuntimes(get('runtimes'), { containerd: crictl || answered('ctr-containers'), docker: answered('docker') }, get('task-bundles').trim() !== '');
  }
  if (has('manifests')) {
    st.kubeletHealthy = get('kubelet-healthz').trim() === 'ok';
    st.staticPods = parseManifests(get('manifests'));
  }
  if (has('pod-dirs')) st.pods = { ...parsePodTraces(get('pod-dirs'), get('netns-inodes'), get('proc-netns')), leases: st.pods.leases };
  if (has('ipam-leases')) st.pods = { ...st.pods, leases: parseLeases(get('ipam-leases')) };
  if (has('kube-cgroups')) st.cgroups = parseKubeCgroups(get('kube-cgroups'));
  if (has('etcd')) {
    const etcd = parseEtcd(get('etcd'));
    if (etcd) st.etcd = etcd;
    else delete st.etcd;
  }
  return st;
}

/** Why a probe's output has no `end` section, in words an SRE can act on. */
export function unfinishedProbe(host: string, r: { code: number; stdout: string; stderr: string }, nonce: string): TransportError {
  const why =
    r.code === 124
      ? 'the probe timed out on the node'
      : r.code === 0 && r.stdout.includes(`@@decom-${nonce} key \n`)
        ? 'the probe could not read /proc/sys/kernel/random/uuid, which marks its output'
        : `the probe did not finish (exit ${r.code})`;
  return new TransportError(host, 'exec', `${why}${r.stderr.trim() ? `: ${r.stderr.trim().split('\n').slice(-1)[0]}` : ''}`);
}

export const newNonce = (): string => randomBytes(8).toString('hex');

/**
 * Whether a probe written for containerd at `used` looked in the wrong places: the node's
 * config (read in the same trip) puts its state, socket or plugin dirs elsewhere. Only
 * then does a probe go again, once; a node whose config keeps these where decom first
 * looks pays nothing.
 */
export function probedElsewhere(used: ContainerdPaths, found: ContainerdPaths, views: ReadonlySet<View>): boolean {
  // Only what the script of these views is written from.
  const key = (p: ContainerdPaths) =>
    JSON.stringify([
      views.has('containers') ? [p.state, p.address] : [],
      views.has('files') ? statePaths(p) : [],
      views.has('install') ? [p.address, installPaths(p)] : [],
      views.has('facts') ? p.cniConfDirs : [],
    ]);
  return key(used) !== key(found);
}

/** One exec, one round trip: everything decom needs to know about the node (or the views asked for, on top of `prev`). */
export async function probeNode(
  t: Transport,
  opts: { sudo?: boolean; timeoutSec?: number; views?: ReadonlySet<View>; prev?: NodeState } = {},
): Promise<NodeState> {
  let used = opts.prev?.containerd ?? CONTAINERD_DEFAULTS;
  for (let trip = 1; ; trip++) {
    const nonce = newNonce();
    const r = await t.exec(probeScript(nonce, opts.views ?? ALL_VIEWS, used, trip === 1 ? opts.prev?.containerdDaemon : undefined), { sudo: opts.sudo, timeoutSec: opts.timeoutSec ?? 60 });
    const sections = splitSections(r.stdout, nonce);
    if (!sections.has('end')) throw unfinishedProbe(t.host, r, nonce);
    const state = stateFromSections(sections, opts.prev);
    // A second look at the config's paths is final: a config that changes between two trips is not chased.
    if (trip === 2 || !probedElsewhere(used, state.containerd, opts.views ?? ALL_VIEWS)) return state;
    used = state.containerd;
  }
}

/** `decom-sandbox up`, `down` and `status`: a fleet of nodes brought up with its inventory (and API, etcd, scenarios as asked), and torn down to nothing. */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, rmdirSync, writeFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { CGROUP_ROOT, MAX_NODES, PREFIX_LEN, RUN_ROOT, claimSubnet, files, hostAddr, instance, instancesOnHost, nodeAddr, releaseAllSubnets, releaseSubnet, removeIfEmpty, type Instance } from './layout.js';
import { NODE_MONITOR_GRACE_PERIOD, apiClient, apiDir, kubeconfigFile, startApi, stopApi } from './api/control.js';
import { CONTAINERD_PATHS, isAlive, nodeExec, startNode, stopNode, type ContainerdPaths, type Init } from './node.js';
import { requirePrograms, requireRoot } from './prereq.js';
import { plantScenario } from './scenarios/index.js';
import { plantCluster } from './scenarios/cluster.js';
import { needsApi, scenarioList, scenarioPrograms, type ScenarioName } from './scenarios/catalog.js';
import type { Role, SandboxNode, SandboxState } from './types.js';
import { startEtcd } from './etcd.js';
import { MAX_SERVICES, loadServices } from './services.js';
import { buildImage } from './image.js';
import { DEFAULT_RUNTIME, resolveRuntime, runtimeList, type NodeRuntime, type RuntimeFamily } from './runtimes.js';
import { run, runOk } from 'decom/run';
import { inputError } from 'decom/errors';
import { choiceList } from 'decom/flags';

export interface UpOptions {
  nodes: number;
  controlPlanes: number;
  /** The nodes' PID 1: one, or several separated by commas: one per node, in turn. */
  init: string;
  /** containerd 2, 1.7 or 1.6 (runtimes.ts): one, or several separated by commas, one per node in turn. Default 2. */
  containerd?: string;
  /** Where containerd keeps its root, state and socket: default or moved (runtimes 2 and 1.7), one per node in turn. Default `default`. */
  containerdPaths?: string;
  /** A scenario, or several separated by commas: one per node, in turn. */
  scenario: string | null;
  etcd: boolean;
  /** kube-proxy Services (iptables mode) to load into every node's iptables-nft; 0 for none. */
  services: number;
  /** Run the sandbox's Kubernetes API (kubeconfig beside the inventory); implied by a scenario that needs it. */
  api?: boolean;
  /** The API's node lifecycle grace (kube-controller-manager's --node-monitor-grace-period), seconds. */
  nodeMonitorGracePeriod?: number;
  /** Progress lines for the user; the sandbox itself prints nothing. */
  log?: (line: string) => void;
}

export function readState(dir = instance().dir): SandboxState | undefined {
  const f = files(dir).state;
  if (!existsSync(f)) return undefined;
  try {
    const state = JSON.parse(readFileSync(f, 'utf8')) as SandboxState;
    state.nodes = state.nodes.filter(Boolean); // nodes boot in parallel: a crash can leave holes
    return state;
  } catch {
    return undefined; // torn by a crash mid-write: `down` still cleans up by name
  }
}

const INITS: readonly Init[] = ['systemd', 'none'];

/** `--init systemd,none`: one PID 1 per node, in turn (as --scenario). */
export const initList = (text: string): Init[] => choiceList('--init', 'init', text, INITS);

/** `--containerd-paths default,moved`: one per node, in turn (as --containerd). */
export const containerdPathsList = (text: string): ContainerdPaths[] => choiceList('--containerd-paths', 'paths', text, CONTAINERD_PATHS);

/** Validates flags before anything is built: bad input costs nothing to undo. */
export function checkUpOptions(o: UpOptions): void {
  initList(o.init);
  const families = runtimeList(o.containerd ?? DEFAULT_RUNTIME);
  const paths = containerdPathsList(o.containerdPaths ?? 'default');
  if (!Number.isInteger(o.nodes) || o.nodes < 1 || o.nodes > MAX_NODES) {
    throw inputError(`--nodes must be a whole number from 1 to ${MAX_NODES}, got ${o.nodes}`);
  }
  if (!Number.isInteger(o.controlPlanes) || o.controlPlanes < 1 || o.controlPlanes > o.nodes) {
    throw inputError(`--control-planes must be from 1 to --nodes (${o.nodes}), got ${o.controlPlanes}`);
  }
  if (o.nodeMonitorGracePeriod !== undefined && (!Number.isInteger(o.nodeMonitorGracePeriod) || o.nodeMonitorGracePeriod < 1 || o.nodeMonitorGracePeriod > 3600)) {
    throw inputError(`--node-monitor-grace-period must be a whole number of seconds from 1 to 3600, got ${o.nodeMonitorGracePeriod}`);
  }
  if (o.scenario !== null) {
    const api = scenarioList(o.scenario).find(needsApi);
    // Its pods go on a first and a last worker, the control plane tainted: two workers at least.
    if (api && o.nodes - o.controlPlanes < 2) {
      throw inputError(`scenario ${api} needs two worker nodes at least: --nodes ${o.controlPlanes + 2} or more with --control-planes ${o.controlPlanes}`);
    }
  }
  // Moved paths are set in a drop-in the config imports: containerd 2 and 1.7 nodes (1.6 is the Docker node's, left as Debian 12 ships it).
  const scenarios = o.scenario !== null ? scenarioList(o.scenario) : [];
  for (let i = 0; i < o.nodes; i++) {
    if (paths[i % paths.length] !== 'moved') continue;
    if (scenarios.length && scenarios[i % scenarios.length] === 'docker-runtime') {
      throw inputError(`--containerd-paths: node${i + 1} (docker-runtime) keeps this host's containerd 1.6: its paths cannot be moved; give it default`);
    }
    if (families[i % families.length] === '1.6') {
      throw inputError(`--containerd-paths: node${i + 1} runs containerd 1.6: its paths can be moved with containerd 2 or 1.7 only; give it default`);
    }
  }
  if (!Number.isInteger(o.services) || o.services < 0 || o.services > MAX_SERVICES) {
    throw inputError(`--services must be a whole number from 0 to ${MAX_SERVICES}, got ${o.services}`);
  }
}

function rolesOf(index: number, controlPlanes: number): Role[] {
  return index < controlPlanes ? ['control-plane', 'etcd'] : ['worker'];
}

/**
 * kubespray's inventory shape, so the same file serves decom, kubespray and Ansible:
 * addresses per host, the connection settings they share once in all.vars.
 */
function inventoryYaml(state: SandboxState, dir: string): string {
  const f = files(dir);
  const hostVars = Object.fromEntries(state.nodes.map((n) => [n.name, { ansible_host: n.addr, ip: n.addr, access_ip: n.addr }]));
  const group = (role: Role) =>
    Object.fromEntries(state.nodes.filter((n) => n.roles.includes(role)).map((n) => [n.name, null]));
  const doc = {
    all: {
      hosts: hostVars,
      children: {
        kube_control_plane: { hosts: group('control-plane') },
        etcd: { hosts: group('etcd') },
        kube_node: { hosts: group('worker') },
        k8s_cluster: { children: { kube_control_plane: null, kube_node: null } },
      },
      vars: {
        ansible_user: 'root',
        ansible_ssh_private_key_file: f.key,
        ansible_ssh_common_args: `-o UserKnownHostsFile=${f.knownHosts} -o StrictHostKeyChecking=yes`,
        // The cluster's API, for `decom run` (the decommission) without --kubeconfig.
        ...(state.api ? { decom_kubeconfig: kubeconfigFile(dir) } : {}),
      },
    },
  };
  return `# Written by \`decom sandbox up\` (${state.createdAt}); removed by \`decom sandbox down\`.\n${stringify(doc, { nullStr: '', lineWidth: 0 })}`;
}

async function ensureHostNetwork(inst: Instance, slot: number): Promise<void> {
  if ((await run('ip', ['link', 'show', inst.bridge])).code !== 0) {
    await runOk('ip', ['link', 'add', inst.bridge, 'type', 'bridge']);
  }
  await runOk('ip', ['link', 'set', inst.bridge, 'up']);
  if ((await run('ip', ['link', 'show', inst.hostLink])).code !== 0) {
    await runOk('ip', ['link', 'add', inst.hostLink, 'link', inst.bridge, 'type', 'macvlan', 'mode', 'bridge']);
    await runOk('ip', ['addr', 'add', `${hostAddr(slot)}/${PREFIX_LEN}`, 'dev', inst.hostLink]);
  }
  await runOk('ip', ['link', 'set', inst.hostLink, 'up']);
}

/** At most `limit` promises in flight: a 2-core host boots 50 nodes faster in waves than all at once. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const errors: unknown[] = [];
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i] as T, i);
      } catch (e) {
        errors.push(e);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (errors.length) throw errors[0];
  return out;
}

export async function up(o: UpOptions, inst: Instance = instance()): Promise<SandboxState> {
  const log = o.log ?? (() => {});
  checkUpOptions(o);
  requireRoot('decom sandbox up');
  if (existsSync(join(CGROUP_ROOT, 'cgroup.controllers'))) {
    throw inputError('the sandbox needs cgroup v1 or hybrid hierarchies (this host mounts only cgroup v2 at /sys/fs/cgroup)');
  }
  const inits = initList(o.init);
  requirePrograms([
    'unshare', 'nsenter', 'setpriv', 'ip', 'sshd', 'ssh-keygen', 'tini', 'containerd', 'runc', 'busybox',
    ...(inits.includes('systemd') ? ['systemd'] : []),
    ...(o.etcd ? ['etcd', 'etcdctl'] : []),
    ...(o.scenario ? scenarioList(o.scenario).flatMap(scenarioPrograms) : []),
    ...(o.services ? ['iptables', 'iptables-legacy', 'iptables-nft-restore'] : []),
  ]);
  const list = o.scenario ? scenarioList(o.scenario) : [];
  const plan = nodePlan(o, list, log);
  const dir = inst.dir;
  const f = files(dir);
  const existing = readState(dir);
  if (existing && existing.nodes.some(isAlive)) {
    const which = inst.name === null ? '' : ` --instance ${inst.name}`;
    throw inputError(`a sandbox is already up in ${dir} (${existing.nodes.length} nodes): run \`decom sandbox down${which}\` first`);
  }
  await down(inst); // leftovers of a crashed run: clear them before building

  const slot = claimSubnet(inst.name);
  const state: SandboxState = {
    version: 1,
    createdAt: new Date().toISOString(),
    subnet: slot,
    scenario: o.scenario,
    etcd: o.etcd,
    services: o.services,
    nodes: [],
  };
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(f.state, JSON.stringify(state, null, 2));
    raiseInotifyInstances(o, inst);
    await runOk('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'decom-sandbox', '-f', f.key]);
    const authorizedKey = readFileSync(`${f.key}.pub`, 'utf8');
    await ensureHostNetwork(inst, slot);
    const peers = Array.from({ length: o.nodes }, (_, i) => ({ name: `node${i + 1}`, addr: nodeAddr(slot, i + 1) }));
    log(`booting ${o.nodes} node${o.nodes > 1 ? 's' : ''} (${describePlan(plan)})`);
    await mapLimit(peers, 12, async (p, i) => {
      const { init, runtime, containerdPaths } = plan[i] as NodePlan;
      const h = await startNode({ ...p, init, runtime, containerdPaths, dir: f.node(p.name), peers, authorizedKey, bridge: inst.bridge, cgroup: inst.cgroup });
      const { state: bootState, ...handle } = h;
      const { binds: _, ...facts } = runtime;
      state.nodes[i] = { ...p, ...handle, init, runtime: facts, containerdPaths, roles: rolesOf(i, o.controlPlanes), bootState };
      // Saved as nodes come up, so a failure half-way can still be torn down by state.
      writeFileSync(f.state, JSON.stringify(state, null, 2));
    });
    writeFileSync(
      f.knownHosts,
      state.nodes
        .map((n) => `${n.addr} ${readFileSync(join(f.node(n.name), 'host_key.pub'), 'utf8').trim().split(' ').slice(0, 2).join(' ')}\n`)
        .join(''),
    );
    writeFileSync(f.inventory, inventoryYaml(state, dir));
    if (o.etcd) {
      log('starting etcd on the etcd nodes');
      await startEtcd(state);
    }
    const apiScenarios = new Set(list.filter(needsApi));
    if (o.api || apiScenarios.size) {
      log('starting the Kubernetes API');
      await startApi(dir, hostAddr(slot), o.nodeMonitorGracePeriod);
      state.api = true;
      writeFileSync(f.state, JSON.stringify(state, null, 2));
      writeFileSync(f.inventory, inventoryYaml(state, dir)); // now naming the kubeconfig
    }
    if (list.length || state.api) {
      log(list.length ? `planting scenario ${o.scenario}` : 'joining every node to the cluster');
      await buildImage(f.image);
      const image = readFileSync(f.image);
      // The kubelet's Lease must be renewed well within the grace period (40 s renewed every 10 s against 50 s by default).
      const grace = o.nodeMonitorGracePeriod ?? NODE_MONITOR_GRACE_PERIOD;
      const member = state.api ? { kubeconfig: readFileSync(kubeconfigFile(dir), 'utf8'), leaseSeconds: Math.min(40, Math.max(2, Math.floor((grace * 4) / 5))) } : undefined;
      await mapLimit(state.nodes, 6, async (n, i) => {
        const name = list.length ? (list[i % list.length] as ScenarioName) : null;
        // A node joins the API when its scenario needs it, or when --api names no scenario.
        await plantScenario(name, n, state, image, name === null || needsApi(name) ? member : undefined);
        if (name) n.scenario = name;
      });
      if (apiScenarios.size) {
        log(`planting the cluster's objects (${[...apiScenarios].join(', ')})`);
        await plantCluster({ scenarios: apiScenarios, state, dir, api: apiClient(dir), log });
      }
    }
    if (o.services) {
      log(`loading ${o.services} kube-proxy Services into every node's iptables-nft`);
      // A few seconds of CPU each (iptables-nft-restore), so not all nodes at once.
      await mapLimit(state.nodes, 2, (n) => loadServices(n, state, o.services));
    }
    writeFileSync(f.state, JSON.stringify(state, null, 2));
    return state;
  } catch (e) {
    log('bring-up failed: tearing down what was built');
    await down(inst).catch(() => {});
    throw e;
  }
}

interface NodePlan {
  init: Init;
  runtime: NodeRuntime;
  containerdPaths: ContainerdPaths;
}

/**
 * Each node's PID 1 and runtime, from the flags in turn, resolved before anything is
 * built (a runtime missing from the cache is an input error). A docker-runtime node
 * keeps the host's containerd: the one Debian 12's Docker runs with.
 */
function nodePlan(o: UpOptions, scenarios: ScenarioName[], log: (line: string) => void): NodePlan[] {
  const inits = initList(o.init);
  const families = runtimeList(o.containerd ?? DEFAULT_RUNTIME);
  const paths = containerdPathsList(o.containerdPaths ?? 'default');
  const resolved = new Map<RuntimeFamily, NodeRuntime>();
  const runtimeOf = (family: RuntimeFamily) => resolved.get(family) ?? (resolved.set(family, resolveRuntime(family)).get(family) as NodeRuntime);
  return Array.from({ length: o.nodes }, (_, i) => {
    let family = families[i % families.length] as RuntimeFamily;
    if (scenarios.length && scenarios[i % scenarios.length] === 'docker-runtime' && family !== '1.6') {
      family = '1.6';
      log(`node${i + 1} (docker-runtime) keeps this host's containerd ${runtimeOf('1.6').containerd}, the one Debian 12's Docker runs with`);
    }
    return { init: inits[i % inits.length] as Init, runtime: runtimeOf(family), containerdPaths: paths[i % paths.length] as ContainerdPaths };
  });
}

/** "init: systemd; containerd 2.1.9+ds1-5 (Debian testing) with CNI plugins 1.9.1+ds1-1", each distinct value once; moved paths named. */
function describePlan(plan: NodePlan[]): string {
  const inits = [...new Set(plan.map((p) => p.init))].join(', ');
  const runtimes = [...new Set(plan.map((p) => `containerd ${p.runtime.containerd} (${p.runtime.source}) with CNI plugins ${p.runtime.cni}`))].join('; ');
  const moved = plan.flatMap((p, i) => (p.containerdPaths === 'moved' ? [`node${i + 1}`] : []));
  return `init: ${inits}; ${runtimes}${moved.length ? `; containerd paths moved on ${moved.join(', ')}` : ''}`;
}

/**
 * systemd, journald and dbus each hold inotify instances, and every node of every
 * instance shares the host's per-user limit (128 by default: about 25 systemd nodes).
 * Each instance that runs systemd nodes says how many in a file of its own
 * (RUN_ROOT/inotify/NAME) before it boots them; the limit is raised to cover them all,
 * the first raise recording the host's value, and the `down` that removes the last
 * such file puts that value back. Every read tolerates another instance's `up` or
 * `down` changing the files at the same moment.
 */
const INOTIFY = '/proc/sys/fs/inotify/max_user_instances';
const INOTIFY_DIR = join(RUN_ROOT, 'inotify');
const INOTIFY_RECORD = join(RUN_ROOT, 'inotify-max-user-instances');
const inotifyClaim = (inst: Instance): string => join(INOTIFY_DIR, inst.name ?? 'default');

const readOr = (file: string, fallback: string): string => {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return fallback; // removed meanwhile by another instance
  }
};

/** The systemd nodes every instance has said it runs. */
function claimedSystemdNodes(): number {
  let count = 0;
  try {
    for (const f of readdirSync(INOTIFY_DIR)) count += Number(readOr(join(INOTIFY_DIR, f), '0')) || 0;
  } catch {
    /* no instance has said any */
  }
  return count;
}

function raiseInotifyInstances(o: UpOptions, inst: Instance): void {
  const inits = initList(o.init);
  const systemdNodes = Array.from({ length: o.nodes }, (_, i) => inits[i % inits.length]).filter((x) => x === 'systemd').length;
  if (!systemdNodes) return;
  mkdirSync(INOTIFY_DIR, { recursive: true, mode: 0o700 });
  writeFileSync(inotifyClaim(inst), String(systemdNodes));
  const current = readFileSync(INOTIFY, 'utf8').trim();
  const needed = 128 + 8 * claimedSystemdNodes();
  if (Number(current) >= needed) return;
  try {
    writeFileSync(INOTIFY_RECORD, current, { flag: 'wx' }); // only the first raise records the host's value
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  writeFileSync(INOTIFY, String(needed));
}

/** Gives the instance's claim back; with none left, the host's value goes back. */
function restoreInotifyInstances(inst: Instance, state: SandboxState | undefined): void {
  rmSync(inotifyClaim(inst), { force: true });
  if (claimedSystemdNodes() > 0) return;
  removeIfEmpty(INOTIFY_DIR);
  // A state written before instances kept its own record.
  const saved = readOr(INOTIFY_RECORD, state?.hostSysctls?.[INOTIFY] ?? '');
  rmSync(INOTIFY_RECORD, { force: true });
  if (/^\d+$/.test(saved)) writeFileSync(INOTIFY, saved);
}

/** Every instance with anything on the host: the default one and each named one found by its names. */
async function instancesLeft(): Promise<Instance[]> {
  const links = (await run('ip', ['-o', 'link', 'show'])).stdout.split('\n').map((l) => l.split(': ')[1]?.split('@')[0] ?? '');
  return [instance(null), ...instancesOnHost(links).map((n) => instance(n))];
}

/** Removes what `up` wrote, by name, and the folder only when that leaves it empty. */
function removeStateDir(dir: string): void {
  const f = files(dir);
  for (const p of [f.state, f.key, `${f.key}.pub`, f.knownHosts, f.inventory, f.image, `${f.image}.tmp`, f.shared, join(dir, 'nodes'), apiDir(dir), kubeconfigFile(dir)]) {
    rmSync(p, { recursive: true, force: true });
  }
  removeIfEmpty(dir);
  // /run/decom goes with the last instance's folder (never a folder DECOM_SANDBOX_DIR named).
  if (dirname(dir) === RUN_ROOT) removeIfEmpty(RUN_ROOT);
}

/** Every cgroup dir of the instance, deepest first, in every hierarchy. */
function sandboxCgroups(inst: Instance): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(join(d, e.name));
    out.push(d);
  };
  for (const h of readdirSync(CGROUP_ROOT)) {
    const top = join(CGROUP_ROOT, h, inst.cgroup);
    if (existsSync(top) && statSync(top).isDirectory()) walk(top);
  }
  return out;
}

/**
 * Tears one instance down to nothing: node PID 1s (their PID namespaces take every
 * process with them, and the last process takes the mounts and the netns), any
 * stray process still in its cgroups, the cgroups, its host links and their
 * neighbour entries, its subnet and its state dir. Other instances are not touched.
 * Safe to run when nothing is up.
 */
export async function down(inst: Instance = instance()): Promise<{ nodes: number }> {
  requireRoot('decom sandbox down');
  const dir = inst.dir;
  const state = readState(dir);
  const nodes = state?.nodes ?? [];
  await stopApi(dir);
  await Promise.all(nodes.map(stopNode));
  // Anything left in the instance's cgroups (by PID, from the kernel's own list).
  for (let round = 0; round < 50; round++) {
    const pids = new Set<number>();
    for (const cg of sandboxCgroups(inst)) {
      try {
        for (const p of readFileSync(join(cg, 'cgroup.procs'), 'utf8').split('\n')) if (p) pids.add(Number(p));
      } catch {
        /* cgroup vanished */
      }
    }
    if (!pids.size) break;
    for (const p of pids) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const cg of sandboxCgroups(inst)) {
    for (let i = 0; i < 50; i++) {
      try {
        rmdirSync(cg);
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') break;
        await new Promise((r) => setTimeout(r, 20)); // EBUSY while the kernel finishes exiting tasks
      }
    }
  }
  if ((await run('ip', ['link', 'show', inst.hostLink])).code === 0) {
    await run('ip', ['neigh', 'flush', 'dev', inst.hostLink]);
    await runOk('ip', ['link', 'del', inst.hostLink]);
  }
  if ((await run('ip', ['link', 'show', inst.bridge])).code === 0) await runOk('ip', ['link', 'del', inst.bridge]);
  restoreInotifyInstances(inst, state);
  releaseSubnet(inst.name);
  removeStateDir(dir);
  return { nodes: nodes.length };
}

/**
 * `down --all`: every instance on the host, the default one and each named one, found
 * by its names; one that fails does not stop the others (the first error is thrown
 * after). Then every subnet slot, even one a crash left without its name.
 */
export async function downAll(): Promise<{ instances: number; nodes: number }> {
  requireRoot('decom sandbox down');
  let instances = 0;
  let nodes = 0;
  const errors: unknown[] = [];
  for (const inst of await instancesLeft()) {
    try {
      const r = await down(inst);
      if (r.nodes) instances++;
      nodes += r.nodes;
    } catch (e) {
      errors.push(e);
    }
  }
  if (errors.length) throw errors[0];
  releaseAllSubnets();
  removeIfEmpty(RUN_ROOT);
  return { instances, nodes };
}

export interface NodeStatus {
  name: string;
  addr: string;
  roles: Role[];
  init: Init;
  /** What containerd the node runs (absent in a state written before runtimes were recorded). */
  runtime?: SandboxNode['runtime'];
  /** Where it keeps its root, state and socket (absent in a state written before they could move). */
  containerdPaths?: ContainerdPaths;
  alive: boolean;
  state: string;
}

export async function status(inst: Instance = instance()): Promise<{ dir: string; state: SandboxState | undefined; nodes: NodeStatus[] }> {
  requireRoot('decom sandbox status'); // the state folder is root's (0700): without root it looks empty
  const dir = inst.dir;
  const state = readState(dir);
  const nodes = await Promise.all(
    (state?.nodes ?? []).filter(Boolean).map(async (n): Promise<NodeStatus> => {
      const alive = isAlive(n);
      let s = alive ? 'running' : 'down';
      if (alive && n.init === 'systemd') s = (await nodeExec(n, 'systemctl is-system-running', { timeoutMs: 10_000 })).stdout.trim() || 'unknown';
      return { name: n.name, addr: n.addr, roles: n.roles, init: n.init, runtime: n.runtime, containerdPaths: n.containerdPaths, alive, state: s };
    }),
  );
  return { dir, state, nodes };
}

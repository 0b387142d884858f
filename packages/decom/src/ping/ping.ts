/**
 * `decom ping`: what a run needs of each host before it changes anything, asked while
 * changing nothing, as `ansible -m ping` does: the login, become, the machine
 * interlocks a run asks (hostname, machine-id) and the Node the host maps to. Hosts
 * run in the one host pool; each is read with the probe's read-only first section
 * alone (its hostname, machine-id and uid), one exec.
 */
import type { V1Node } from '@kubernetes/client-node';
import { nodeNamed, nodeNameOf, type Host } from '../inventory/index.js';
import type { NodesRead } from '../cluster/node.js';
import { probeNode, type NodeState, type View } from '../probes/index.js';
import { otherMachine, otherNodeName, refusedHost, wrongHost } from '../rules/machine.js';
import { TransportError, withoutHost, type Transport } from '../transport/types.js';
import { EXIT, foldExit, type ExitCode } from '../util/exit-codes.js';
import { DEFAULT_FORKS, pool } from '../util/pool.js';
import { printable } from '../verify/report.js';

/** The probe's views for a ping: none, so only its first section (hostname, machine-id, uid) is read. */
const NO_VIEWS: ReadonlySet<View> = new Set();

/**
 * How a host answered: `ok`, every check passed; `unreachable`, no login (the
 * connection, its host key, the login itself); `become-failed`, sudo refused;
 * `wrong-machine`, an interlock a run would refuse on; `api-failed`, the API could not
 * say which Node the host is.
 */
export type PingStatus = 'ok' | 'unreachable' | 'become-failed' | 'wrong-machine' | 'api-failed';

/** The Node a host maps to, as far as it was checked. */
export interface PingNode {
  /** The Node's name (decom_node_name, kube_override_hostname, else the inventory name). */
  name: string;
  /** Whether the API was asked; `why` says why not, or what it answered instead. */
  checked: boolean;
  registered?: boolean;
  /** The machine-id the Node reports, when it reports one. */
  machineId?: string;
  server?: string;
  why?: string;
}

export interface PingReport {
  host: string;
  address: string;
  status: PingStatus;
  /** user@address:port as logged in, or "local" (ansible_connection=local). */
  login?: string;
  /** The user the host becomes, whenever it becomes: through sudo, or without it when the login user is that user already (as in every command). Absent when become is not asked. */
  become?: string;
  uid?: number;
  hostname?: string;
  machineId?: string;
  node: PingNode;
  /** Why the host did not pass: the transport's reason (without the host's name) or the interlock's (without the host's name and address). */
  error?: string;
}

/** What the API said of the hosts' Nodes: not asked (no kubeconfig), read, or failed as a whole. */
export type NodesAnswer = { asked: false } | { asked: true; read: NodesRead } | { asked: true; failed: string };

/** What one host answered over its connection: its state, or where reaching it failed. */
export type Reached = { state: NodeState; login: string } | { failed: TransportError };

/** Logs in to one host and reads its hostname, machine-id and uid (through sudo when it becomes), writing nothing. */
export async function reach(host: Host, connect: (h: Host) => Promise<Transport>): Promise<Reached> {
  let t: Transport | undefined;
  try {
    t = await connect(host);
    const login = host.connection === 'local' ? 'local' : `${host.user}@${host.address}:${host.port}`;
    return { state: await probeNode(t, { sudo: host.become, views: NO_VIEWS, timeoutSec: 30 }), login };
  } catch (e) {
    if (!(e instanceof TransportError)) throw e;
    return { failed: e };
  } finally {
    await t?.close().catch(() => {});
  }
}

/** The Node part of a host's report, and the interlock a registered Node refuses on. Pure. */
function judgeNode(host: Host, state: NodeState, answer: NodesAnswer): { node: PingNode; refused?: string; failed?: string } {
  const name = nodeNameOf(host);
  if (!answer.asked) return { node: { name, checked: false, why: 'no kubeconfig found' } };
  if ('failed' in answer) return { node: { name, checked: false, why: answer.failed }, failed: `could not ask the API for Node ${name}: ${answer.failed}` };
  const { server, nodes, errors } = answer.read;
  const error = errors.get(name);
  if (error !== undefined) return { node: { name, checked: false, server, why: error }, failed: `could not ask ${server} for Node ${name}: ${error}` };
  const found: V1Node | undefined = nodes.get(name);
  if (!found) return { node: { name, checked: true, registered: false, server } };
  const machineId = found.status?.nodeInfo?.machineID;
  const node: PingNode = { name, checked: true, registered: true, server, ...(machineId ? { machineId } : {}) };
  const refused = otherMachine(host, name, found, state) ?? otherNodeName(host, name, nodeNamed(host), state);
  return { node, ...(refused ? { refused } : {}) };
}

/** A host's report from what it answered and what the API said of its Node. Pure. */
export function judge(host: Host, reached: Reached, answer: NodesAnswer): PingReport {
  const base = { host: host.name, address: host.address };
  if ('failed' in reached) {
    const e = reached.failed;
    const name = nodeNameOf(host);
    return { ...base, status: e.step === 'sudo' ? 'become-failed' : 'unreachable', node: { name, checked: false, why: 'the host was not reached' }, error: withoutHost(e.host, e.message) };
  }
  const { state, login } = reached;
  const seen = {
    login,
    ...(host.become ? { become: host.becomeUser } : {}),
    uid: state.uid,
    hostname: state.hostname,
    machineId: state.machineId,
  };
  const own = wrongHost(host, state);
  const { node, refused, failed } = judgeNode(host, state, answer);
  const interlock = own ?? refused;
  if (interlock) return { ...base, status: 'wrong-machine', ...seen, node, error: interlock.startsWith(refusedHost(host)) ? interlock.slice(refusedHost(host).length) : interlock };
  if (failed) return { ...base, status: 'api-failed', ...seen, node, error: failed };
  return { ...base, status: 'ok', ...seen, node };
}

export interface PingOptions {
  connect: (host: Host) => Promise<Transport>;
  /** Hosts reached at once (the host pool's bound). */
  forks?: number;
  /** The API's answer for these Nodes' names; absent: no kubeconfig was found. */
  nodes?: (names: string[]) => Promise<NodesAnswer>;
}

/** Every host pinged, in the pool, while the API is asked for their Nodes. */
export async function ping(hosts: Host[], opts: PingOptions): Promise<PingReport[]> {
  const [reached, answer] = await Promise.all([
    pool(hosts, opts.forks ?? DEFAULT_FORKS, (h) => reach(h, opts.connect)),
    opts.nodes ? opts.nodes([...new Set(hosts.map(nodeNameOf))]) : Promise.resolve<NodesAnswer>({ asked: false }),
  ]);
  return hosts.map((h, i) => judge(h, reached[i] as Reached, answer));
}

/** 0 every host answered; 3 one was unreachable, its become failed or the API could not say; 4 one is the wrong machine (3 wins). */
export const exitCode = (reports: PingReport[]): ExitCode =>
  foldExit(reports.map((r) => (r.status === 'ok' ? EXIT.clean : r.status === 'wrong-machine' ? EXIT.refused : EXIT.unreachable)));

const STATUS_WORD: Record<PingStatus, string> = {
  ok: 'ok',
  unreachable: 'UNREACHABLE',
  'become-failed': 'BECOME FAILED',
  'wrong-machine': 'WRONG MACHINE',
  'api-failed': 'NODE NOT CHECKED',
};

/** The Node as a line says it. */
function nodeWords(r: PingReport): string {
  const n = r.node;
  if (!n.checked) return n.why === 'no kubeconfig found' ? 'Node: not checked (no kubeconfig found)' : `Node ${n.name}: not checked`;
  if (!n.registered) return `Node ${n.name}: not registered at ${n.server}`;
  if (!n.machineId) return `Node ${n.name}: registered (it reports no machine-id)`;
  return `Node ${n.name}: registered, ${n.machineId === r.machineId ? 'same machine-id' : `machine-id ${printable(n.machineId)}`}`;
}

/** One line per host, naming it once: its status, what it answered, and why it failed. Node-side text is escaped (`printable`). */
export function renderText(reports: PingReport[]): string {
  const lines = reports.map((r) => {
    const said: string[] = [];
    if (r.error && r.status !== 'wrong-machine') said.push(printable(r.error));
    if (r.login) said.push(`login ${r.login}`);
    if (r.login) said.push(r.become ? `become ${r.become} (uid ${r.uid})` : `no become (uid ${r.uid})`);
    if (r.hostname !== undefined) said.push(`hostname ${printable(r.hostname)}`);
    if (r.machineId !== undefined) said.push(`machine-id ${printable(r.machineId) || '(none)'}`);
    if (r.status !== 'unreachable' && r.status !== 'become-failed') said.push(nodeWords(r));
    const head = r.status === 'wrong-machine' ? `${STATUS_WORD[r.status]} at ${r.address}: ${printable(r.error ?? '')}` : STATUS_WORD[r.status];
    return `${printable(r.host)}: ${head}${said.length ? `: ${said.join(', ')}` : ''}`;
  });
  return `${lines.join('\n')}\n`;
}

export const renderJson = (reports: PingReport[]): string => `${JSON.stringify({ hosts: reports }, null, 2)}\n`;

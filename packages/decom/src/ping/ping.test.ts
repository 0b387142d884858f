// `decom ping`'s judgement, pure: what a host answered and what the API said of its Node
// in, its status, line and the command's exit code out. The same interlocks as a run's
// (hostname, machine-id, the Node's name) with their reasons; the host named once a line.
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { Host } from '../inventory/index.js';
import { emptyState, type NodeState } from '../probes/index.js';
import { TransportError, type Transport } from '../transport/types.js';
import { exitCode, judge, ping, renderJson, renderText, type NodesAnswer } from './ping.js';

const host = (name: string, over: Partial<Host> = {}): Host => ({
  name, address: `198.18.0.1${name.slice(-1)}`, port: 22, user: 'root', become: false, becomeUser: 'root',
  strictHostKeyChecking: 'yes', proxyJump: [], connectTimeoutSec: 10, groups: ['all'], vars: {}, ...over,
});
const ID1 = '0123456789abcdef0123456789abcdef';
const ID2 = 'fedcba9876543210fedcba9876543210';
const state = (hostname: string, machineId = ID1, uid = 0): NodeState => ({ ...emptyState(), hostname, machineId, uid });
const reached = (s: NodeState, h: Host) => ({ state: s, login: `${h.user}@${h.address}:${h.port}` });
const node = (name: string, machineID?: string): V1Node => ({ metadata: { name }, ...(machineID ? { status: { nodeInfo: { machineID } as never } } : {}) });
const SERVER = 'https://198.18.0.1:6443';
const api = (nodes: V1Node[], errors: [string, string][] = []): NodesAnswer => ({
  asked: true,
  read: { server: SERVER, nodes: new Map(nodes.map((n) => [n.metadata!.name!, n])), errors: new Map(errors) },
});
const NO_API: NodesAnswer = { asked: false };

describe('judge: one host', () => {
  it('ok: login, no become, hostname and machine-id, Node not checked without a kubeconfig', () => {
    const h = host('node1');
    const r = judge(h, reached(state('node1'), h), NO_API);
    expect(r).toEqual({
      host: 'node1', address: '198.18.0.11', status: 'ok', login: 'root@198.18.0.11:22', uid: 0, hostname: 'node1', machineId: ID1,
      node: { name: 'node1', checked: false, why: 'no kubeconfig found' },
    });
    expect(renderText([r])).toBe(`node1: ok: login root@198.18.0.11:22, no become (uid 0), hostname node1, machine-id ${ID1}, Node: not checked (no kubeconfig found)\n`);
  });

  it('ok through sudo, the Node registered with the same machine-id; a short hostname matches a long one', () => {
    const h = host('node2', { user: 'ops', become: true });
    const r = judge(h, reached(state('node2.example.com'), h), api([node('node2', ID1)]));
    expect(r.status).toBe('ok');
    expect(renderText([r])).toBe(`node2: ok: login ops@198.18.0.12:22, become root (uid 0), hostname node2.example.com, machine-id ${ID1}, Node node2: registered, same machine-id\n`);
  });

  it('become is reported whenever the host becomes: a root login with become says become root, in the line and the JSON', () => {
    const h = host('node1', { become: true });
    const r = judge(h, reached(state('node1'), h), NO_API);
    expect([r.status, r.become]).toEqual(['ok', 'root']);
    expect(renderText([r])).toContain('login root@198.18.0.11:22, become root (uid 0), hostname node1');
    expect(JSON.parse(renderJson([r])).hosts[0].become).toBe('root');
    const other = host('node1', { become: true, becomeUser: 'postgres' });
    expect(renderText([judge(other, reached(state('node1', ID1, 999), other), NO_API)])).toContain('login root@198.18.0.11:22, become postgres (uid 999)');
  });

  it('a Node not registered, or one that reports no machine-id, is said so and passes', () => {
    const h = host('node3');
    expect(renderText([judge(h, reached(state('node3'), h), api([]))])).toContain(`Node node3: not registered at ${SERVER}\n`);
    const r = judge(h, reached(state('node3'), h), api([node('node3')]));
    expect([r.status, renderText([r])]).toEqual(['ok', expect.stringContaining('Node node3: registered (it reports no machine-id)')]);
  });

  it('wrong machine by its hostname: the reason a run refuses on, the host named once', () => {
    const h = host('node2');
    const r = judge(h, reached(state('node3'), h), NO_API);
    expect(r.status).toBe('wrong-machine');
    expect(r.error).toBe('says its hostname is "node3", not "node2": refusing to reset what may be the wrong machine (set decom_expected_hostname in the inventory if the names differ on purpose)');
    const line = renderText([r]);
    expect(line.startsWith('node2: WRONG MACHINE at 198.18.0.12: says its hostname is "node3"')).toBe(true);
    expect(line.match(/node2\b/g)).toHaveLength(2); // the host, and the expected hostname it names
    expect(line).toContain('hostname node3');
  });

  it('wrong machine by the Node: its machine-id differs, or (unless the inventory names the Node) its name', () => {
    const h = host('node2', { vars: { decom_node_name: 'node3' } });
    const r = judge(h, reached(state('node2', ID1), h), api([node('node3', ID2)]));
    expect(r.status).toBe('wrong-machine');
    expect(r.error).toBe(`has machine-id ${ID1}, but Node node3 reports ${ID2}: the inventory address is another machine than the Node`);
    expect(renderText([r])).toContain(`Node node3: registered, machine-id ${ID2}`);
    const named = host('node1', { vars: { decom_expected_hostname: 'box1' } });
    const other = judge(named, reached(state('box1'), named), api([node('node1', ID1)]));
    expect([other.status, other.error]).toEqual(['wrong-machine', expect.stringMatching(/^says its hostname is "box1", not the Node's name "node1": refusing/)]);
  });

  it('unreachable and become failed: the transport\'s reason without the host\'s name, no Node line', () => {
    const h = host('node4');
    const down = judge(h, { failed: new TransportError('node4', 'connect', 'cannot connect to 198.18.0.14:22: ECONNREFUSED (connection refused)') }, api([]));
    expect(down.status).toBe('unreachable');
    expect(renderText([down])).toBe('node4: UNREACHABLE: connect: cannot connect to 198.18.0.14:22: ECONNREFUSED (connection refused)\n');
    const sudo = judge(h, { failed: new TransportError('node4', 'sudo', 'ops@198.18.0.14 could not sudo to root: Sorry, try again.') }, api([]));
    expect(renderText([sudo])).toBe('node4: BECOME FAILED: sudo: ops@198.18.0.14 could not sudo to root: Sorry, try again.\n');
  });

  it('the API could not say: not checked, named, exit 3', () => {
    const h = host('node1');
    const r = judge(h, reached(state('node1'), h), api([], [['node1', 'connect ECONNREFUSED 198.18.0.1:6443']]));
    expect([r.status, r.error]).toEqual(['api-failed', `could not ask ${SERVER} for Node node1: connect ECONNREFUSED 198.18.0.1:6443`]);
    expect(renderText([r])).toMatch(/^node1: NODE NOT CHECKED: could not ask .*, Node node1: not checked\n$/);
    expect(exitCode([r])).toBe(3);
  });

  it("node-side text cannot forge a line: a hostname's control characters are escaped", () => {
    const h = host('node1', { vars: { decom_expected_hostname: 'x\nnode9: ok' } });
    const r = judge(h, reached(state('x\nnode9: ok'), h), NO_API);
    expect(renderText([r]).split('\n')).toHaveLength(2);
    expect(JSON.parse(renderJson([r])).hosts[0].hostname).toBe('x\nnode9: ok');
  });
});

describe('exit code', () => {
  const h = host('node1');
  const ok = judge(h, reached(state('node1'), h), NO_API);
  const wrong = judge(h, reached(state('node2'), h), NO_API);
  const down = judge(h, { failed: new TransportError('node1', 'connect', 'x') }, NO_API);
  it('0 every host answered, 4 a wrong machine, 3 an unreachable host (3 wins over 4)', () => {
    expect([exitCode([ok, ok]), exitCode([ok, wrong]), exitCode([ok, down]), exitCode([wrong, down])]).toEqual([0, 4, 3, 3]);
  });
});

describe('ping: every host in the pool, the API asked once for every Node', () => {
  it('keeps the hosts\' order, and turns a connection\'s failure into its host\'s line', async () => {
    const asked: string[][] = [];
    const hosts = [host('node1'), host('node2'), host('node3', { vars: { kube_override_hostname: 'node1' } })];
    const connect = async (h: Host): Promise<Transport> => {
      throw new TransportError(h.name, 'host-key', `unknown host key for ${h.address}`);
    };
    const reports = await ping(hosts, { connect, forks: 2, nodes: async (names) => (asked.push(names), api([])) });
    expect(asked).toEqual([['node1', 'node2']]);
    expect(reports.map((r) => [r.host, r.status, r.error])).toEqual([
      ['node1', 'unreachable', 'host-key: unknown host key for 198.18.0.11'],
      ['node2', 'unreachable', 'host-key: unknown host key for 198.18.0.12'],
      ['node3', 'unreachable', 'host-key: unknown host key for 198.18.0.13'],
    ]);
  });
});

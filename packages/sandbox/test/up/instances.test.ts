// Two sandbox instances side by side on one machine: each has its own API, Nodes, subnet and
// host links; a reset of one's node3 leaves the other's alone; `down` of one leaves the other
// running; `down --all` leaves the host as it was. Looks at the whole host: runs alone.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decom, hostSnapshot, inInstance, nodes, ssh } from '../../../decom/test/helpers/sandbox.js';
import { leftovers } from '../../../decom/test/helpers/residue.js';
import { KUBECTL, requireKubectl } from '../../../decom/test/helpers/kubectl.js';
import { tempDir } from '../../../decom/test/helpers/temp.js';
import { instance } from '../../src/layout.js';

const A = 'isoa';
const B = 'isob';

function upIn(name: string): void {
  const r = decom(['sandbox', 'up', '--instance', name, '--nodes', '3', '--scenario', 'cluster']);
  if (r.code !== 0) throw new Error(`sandbox up --instance ${name}: exit ${r.code}: ${r.stderr}`);
}

/** The Nodes an instance's API holds, as real kubectl lists them: name and InternalIP. */
function apiNodes(name: string): string[] {
  const r = spawnSync(KUBECTL, ['get', 'nodes', '-o', 'jsonpath={range .items[*]}{.metadata.name} {.status.addresses[?(@.type=="InternalIP")].address}{"\\n"}{end}'], {
    encoding: 'utf8',
    env: { ...process.env, KUBECONFIG: join(instance(name).dir, 'kubeconfig') },
  });
  if (r.status !== 0) throw new Error(`kubectl get nodes (${name}): ${r.stderr}`);
  return r.stdout.split('\n').filter(Boolean).sort();
}
const stateNodes = (name: string): string[] => inInstance(name, () => nodes().map((n) => `${n.name} ${n.addr}`).sort());
const linkUp = (link: string): boolean => spawnSync('ip', ['link', 'show', link]).status === 0;

describe('two sandbox instances side by side', () => {
  let before: ReturnType<typeof hostSnapshot>;
  beforeAll(() => {
    requireKubectl();
    before = hostSnapshot();
    upIn(A);
    upIn(B);
  });
  afterAll(() => void decom(['sandbox', 'down', '--all']));

  it('gives each its own subnet, links and API: kubectl against each sees only its own Nodes', () => {
    const a = stateNodes(A);
    const b = stateNodes(B);
    expect(a.map((l) => l.split(' ')[0])).toEqual(['node1', 'node2', 'node3']);
    expect(b.map((l) => l.split(' ')[0])).toEqual(['node1', 'node2', 'node3']);
    const subnet = (lines: string[]) => [...new Set(lines.map((l) => l.split(' ')[1]!.replace(/\.\d+$/, '')))];
    expect(subnet(a)).toHaveLength(1);
    expect(subnet(b)).toHaveLength(1);
    expect(subnet(a)).not.toEqual(subnet(b));
    expect(apiNodes(A)).toEqual(a);
    expect(apiNodes(B)).toEqual(b);
    for (const n of [A, B]) {
      const i = instance(n);
      expect([linkUp(i.bridge), linkUp(i.hostLink)]).toEqual([true, true]);
    }
    // The nodes of one cannot reach the other's: separate bridges.
    const bNode1 = b.find((l) => l.startsWith('node1 '))!.split(' ')[1]!;
    expect(inInstance(A, () => ssh('node1', `ping -c 1 -W 1 ${bNode1} >/dev/null 2>&1; echo $?`)).trim()).not.toBe('0');
  });

  it("resets one instance's node3 and leaves the other's node3 as it was (the independent checker on both)", () => {
    const otherBefore = inInstance(B, () => leftovers('node3'));
    expect(otherBefore.length).toBeGreaterThan(0);
    expect(inInstance(A, () => leftovers('node3')).length).toBeGreaterThan(0);
    const state = tempDir('decom-instances-');
    const r = inInstance(A, () => decom(['run', join(instance(A).dir, 'hosts.yaml'), 'node3', '--playbook', 'reset', '--yes', '--state-dir', state]));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(inInstance(A, () => leftovers('node3'))).toEqual([]);
    expect(inInstance(B, () => leftovers('node3')).sort()).toEqual(otherBefore.sort());
  });

  it('takes one instance down and leaves the other running', () => {
    const r = decom(['sandbox', 'down', '--instance', A]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('sandbox down (instance a): 3 node(s) stopped, host cleaned\n'.replace('instance a', `instance ${A}`));
    expect(linkUp(instance(A).bridge)).toBe(false);
    expect(linkUp(instance(A).hostLink)).toBe(false);
    expect(apiNodes(B)).toEqual(stateNodes(B));
    expect(inInstance(B, () => ssh('node3', 'echo reached').trim())).toBe('reached');
    const status = JSON.parse(decom(['sandbox', 'status', '--instance', B, '--output', 'json']).stdout) as { nodes: { alive: boolean }[] };
    expect(status.nodes.map((n) => n.alive)).toEqual([true, true, true]);
  });

  it('down --all leaves the host as it was before either came up', () => {
    const r = decom(['sandbox', 'down', '--all']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('sandbox down --all: 3 node(s) of 1 instance(s) stopped, host cleaned\n');
    expect(hostSnapshot()).toEqual(before);
  });
});

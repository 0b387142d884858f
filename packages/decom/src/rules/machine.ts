/**
 * Whether the machine behind an inventory address is the one the inventory means:
 * its hostname, and the machine-id its Node reports. Pure: the host, the node's state
 * (and the Node) in, the reason to refuse it out. A run asks them before it changes
 * anything (the engine for every host, the cluster steps for the Node), and so does
 * `audit --fix` before its remedies: both trust that the host is the node they judge.
 * `decom ping` asks them too, and only says what they find.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { Host } from '../inventory/index.js';
import type { NodeState } from '../probes/state.js';

const short = (n: string) => n.toLowerCase().split('.')[0];

/** How every reason below names the host it refuses: its inventory name and address, then a space (`decom ping` names the host once, and takes this off). */
export const refusedHost = (host: Host): string => `${host.name} (${host.address}) `;

/** Is the inventory name the host's own? Short names, case-insensitive, unless the inventory names the expected hostname. */
export function wrongHost(host: Host, s: NodeState): string | undefined {
  const expected = String(host.vars.decom_expected_hostname ?? host.name);
  if (short(s.hostname) === short(expected)) return undefined;
  return `${refusedHost(host)}says its hostname is "${s.hostname}", not "${expected}": refusing to reset what may be the wrong machine (set decom_expected_hostname in the inventory if the names differ on purpose)`;
}

/** Why the host behind the inventory address is not the machine the Node is, if it is not: their machine-ids differ. */
export function otherMachine(host: Host, nodeName: string, node: V1Node | undefined, s: NodeState): string | undefined {
  const id = node?.status?.nodeInfo?.machineID;
  if (!id || !s.machineId || id === s.machineId) return undefined;
  return `${refusedHost(host)}has machine-id ${s.machineId}, but Node ${nodeName} reports ${id}: the inventory address is another machine than the Node`;
}

/** Why the host is not the Node by its hostname, if it is not: unless the inventory names the Node (`named`), the two must agree. */
export function otherNodeName(host: Host, nodeName: string, named: boolean, s: NodeState): string | undefined {
  if (named || short(s.hostname) === short(nodeName)) return undefined;
  return `${refusedHost(host)}says its hostname is "${s.hostname}", not the Node's name "${nodeName}": refusing (set decom_node_name or kube_override_hostname in the inventory when the Node is named otherwise)`;
}

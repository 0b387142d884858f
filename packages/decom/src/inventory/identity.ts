/**
 * Which inventory host is which node: the Node a host is, the addresses it may be
 * reached at, and the inventory's etcd group as a node's rules see it. Read from the
 * inventory alone (no API, no probe), so every floor above may ask.
 */
import type { Host, Inventory } from './types.js';

/** kubespray's variable that names the Node, when it is not the inventory name. */
const NODE_NAME_VARIABLE = 'kube_override_hostname';

/** kubespray's variables that hold more addresses a host is known by. */
const ADDRESS_VARIABLES: readonly string[] = ['ip', 'access_ip', 'etcd_address'];

/** The kubespray variables read here: -e takes them too, over the inventory's (command-line-settings.ts). */
export const KUBESPRAY_IDENTITY_VARIABLES: readonly string[] = [NODE_NAME_VARIABLE, ...ADDRESS_VARIABLES];

/** The Node a host is: decom_node_name, kubespray's kube_override_hostname, else the inventory name. */
export const nodeNameOf = (h: Host): string => String(h.vars.decom_node_name ?? h.vars[NODE_NAME_VARIABLE] ?? h.name);

/** Whether the Node's name comes from the inventory's variables (then the hostname need not match it). */
export const nodeNamed = (h: Host): boolean => h.vars.decom_node_name !== undefined || h.vars[NODE_NAME_VARIABLE] !== undefined;

/** The addresses a host may be reached at (a member's peer URL, an API server): the inventory's, kubespray's ip/access_ip/etcd_address. */
export function addressesOf(h: Host): Set<string> {
  return new Set([h.address, ...ADDRESS_VARIABLES.map((name) => h.vars[name])].filter((a): a is string => typeof a === 'string' && a !== ''));
}

/** The host of a URL, IPv6 without its brackets; '' when it is no URL. */
export const hostOf = (url: string): string => {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return '';
  }
};

/** The inventory's etcd group as a node sees it (NodeState.etcdGroup): its hosts' names and addresses, and whether the node is one. */
export interface EtcdGroup {
  addresses: string[];
  self: boolean;
}

/** The inventory's etcd group, for each of its hosts. */
export function etcdGroupOf(inventory: Inventory): (h: Host) => EtcdGroup {
  const members = new Set(inventory.groups.get('etcd') ?? []);
  const addresses = [...members].flatMap((n) => {
    const h = inventory.hosts.get(n);
    return h ? [h.name, nodeNameOf(h), ...addressesOf(h)] : [];
  });
  return (h) => ({ addresses, self: members.has(h.name) });
}

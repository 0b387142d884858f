import type { SshTarget } from '../transport/types.js';

/** One host of an inventory: how to reach it, and what the inventory says of it. */
export interface Host extends SshTarget {
  /** Groups the host belongs to, directly or through child groups; always includes "all". */
  groups: string[];
  /** Merged variables (group_vars, host_vars, inline), Ansible precedence. */
  vars: Record<string, unknown>;
}

export interface Inventory {
  /** The inventory file as given. */
  file: string;
  hosts: Map<string, Host>;
  /** group name -> host names (transitively through children). */
  groups: Map<string, string[]>;
}

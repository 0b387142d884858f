/** What an inventory is once read, whatever its format, and what of a host is safe to print. */
import type { SshTarget } from '../transport/types.js';
import type { Reach } from './connection.js';

/** One host of an inventory: how to reach it, and what the inventory says of it. */
export interface Host extends SshTarget {
  /** Groups the host belongs to, directly or through child groups; always includes "all". */
  groups: string[];
  /** Merged variables (group_vars, host_vars, inline), Ansible precedence. */
  vars: Record<string, unknown>;
  /** The ssh command line the inventory builds, for ssh -G (reach.ts); absent for a host made in code. */
  reach?: Reach;
}

export interface Inventory {
  /** The inventory file as given. */
  file: string;
  hosts: Map<string, Host>;
  /** group name -> host names (transitively through children). */
  groups: Map<string, string[]>;
}

/** Marks decom's own inventory format (here, not in decom-format.ts, so detecting it does not load zod). */
export const DECOM_API_VERSION = 'decom/v1';

export const REDACTED = '(redacted)';

/** Variable names that hold secrets: ansible_become_password, ansible_ssh_pass, vault_token... */
const SECRET_NAME = /pass|secret|token/i;

/** Does a variable of this name hold a secret (never printed; never taken from a command line's own words)? */
export const isSecretName = (name: string): boolean => SECRET_NAME.test(name);

/**
 * decom's own variables, read from a host's variables beside the connection variables:
 * the cluster's kubeconfig, the Node's name, the hostname the wrong-machine check expects.
 */
export const DECOM_VARIABLES: readonly string[] = ['decom_kubeconfig', 'decom_node_name', 'decom_expected_hostname'];

/**
 * A copy of a host that is safe to print or log: the sudo password and key
 * passphrase are replaced, and so is any variable that holds a secret, by its name
 * or because its value is one of those secrets.
 */
export function redact(host: Host): Host {
  const secrets = new Set([host.becomePassword, host.passphrase, host.password].filter((s): s is string => !!s));
  const copy: Host = { ...host, groups: [...host.groups], proxyJump: [...host.proxyJump], vars: scrubVars(host.vars, secrets) };
  delete copy.reach; // its options may hold a ProxyCommand's password
  if (host.becomePassword !== undefined) copy.becomePassword = REDACTED;
  if (host.passphrase !== undefined) copy.passphrase = REDACTED;
  if (host.password !== undefined) copy.password = REDACTED;
  return copy;
}

function scrubVars(vars: Record<string, unknown>, secrets: Set<string>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, SECRET_NAME.test(k) ? REDACTED : scrub(v, secrets)]));
}

function scrub(value: unknown, secrets: Set<string>): unknown {
  if (typeof value === 'string') return containsSecret(value, secrets) ? REDACTED : value;
  if (Array.isArray(value)) return value.map((v) => scrub(v, secrets));
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return scrubVars(value as Record<string, unknown>, secrets);
  }
  return value;
}

const containsSecret = (s: string, secrets: Set<string>) => [...secrets].some((secret) => s.includes(secret));

/**
 * The sandbox's shared types. Below every module that uses them (sandbox.ts, etcd.ts,
 * services.ts, scenarios/): they import this, never each other's types.
 */
import type { ContainerdPaths, Init, NodeHandle } from './node.js';
import type { ScenarioName } from './scenarios/catalog.js';
import type { NodeRuntime } from './runtimes.js';

export type Role = 'control-plane' | 'etcd' | 'worker';

export interface SandboxNode extends NodeHandle {
  name: string;
  addr: string;
  init: Init;
  roles: Role[];
  /** The containerd it runs: family, exact Debian versions (containerd, CNI plugins), where they came from. */
  runtime: Omit<NodeRuntime, 'binds'>;
  /** Where that containerd keeps its root, state and socket (`up --containerd-paths`). */
  containerdPaths: ContainerdPaths;
  /** systemd's `is-system-running` at boot, or `running` for init-less nodes. */
  bootState: string;
  /** The scenario planted on this node. */
  scenario?: ScenarioName;
}

export interface SandboxState {
  version: 1;
  createdAt: string;
  /** Its subnet's slot: the nodes are 198.18.SUBNET.11 and on, the host 198.18.SUBNET.1 (layout.ts); absent means 0. */
  subnet?: number;
  /** As given to `up --scenario` (one, or several separated by commas: one per node, in turn). */
  scenario: string | null;
  etcd: boolean;
  /** kube-proxy Services loaded into every node's iptables-nft (`up --services`); absent means 0. */
  services?: number;
  nodes: SandboxNode[];
  /** The sandbox's Kubernetes API was started (`up --api`). */
  api?: boolean;
  /** Host sysctls `up` raised, with the values `down` puts back (states written before instances; now a record in /run/decom). */
  hostSysctls?: Record<string, string>;
}

/**
 * What a step is. A step is the pair pyinfra calls operation and fact: a pure
 * `plan(state) -> actions` and the residue it owns, judged by the same rules
 * `decom verify` uses. The engine runs the actions, probes the views the step
 * touched, and calls the step `changed` only when its residue is gone.
 */
import type { Duplex } from 'node:stream';
import type { z } from 'zod';
import type { NodeState, View } from '../probes/index.js';
import type { Finding } from '../rules/residue.js';
import type { ClusterContext } from '../cluster/context.js';

export interface Action {
  /** What it does, one line, for the plan, the progress view and the journal. */
  what: string;
  /** POSIX sh, run on the node as root. Its exit status and output go to the journal. */
  script: string;
  /**
   * Done from decom's side instead, over the host's connection (the Docker API through
   * its socket): returns what it did; throwing fails it. `script` then says the same in words.
   */
  client?: (node: NodeIo) => Promise<string>;
  /**
   * A sh condition: the action runs only when it exits 0 (a shell step's `check:`, a
   * remedy's live-node guard). When it says no, what it printed is the skipped action's output.
   */
  guard?: string;
  /** What only the node can tell (the kubelet tearing static pods down): shown as such in --check. */
  nodeDecides?: string;
}

/** What a client-side action may use of the host's connection. */
export interface NodeIo {
  openUnixSocket(path: string): Promise<Duplex>;
  /** A command on the node, as root (what a client action must do there between its calls). */
  exec(script: string, timeoutSec: number): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Writes an event to the run's journal now (what must be known even if the run is killed before the action ends). */
  journal?(event: Record<string, unknown>): void;
}

/** What a step knows of the run and the host, besides the node's state. */
export interface StepContext {
  runId: string;
  /** On the node: /var/backups/decom/RUN-ID (0700). */
  backupDir: string;
  /** The host's name in the inventory, and its variables. */
  host: string;
  /** The Node this host is (decom_node_name, kubespray's kube_override_hostname, else the host's name): the kubelet names static pods after it. */
  node?: string;
  vars: Record<string, unknown>;
  params: Record<string, unknown>;
  /** On the operator's machine: where this host's backup is copied to. */
  operatorBackupDir: string;
  /** The steps that run before this one here (by name): the etcd step's interlock is the etcd-member step's job when that runs first. */
  before: ReadonlySet<string>;
}

export interface Step {
  name: string;
  description: string;
  /** Parameters a playbook may give (`with:`), with their defaults. */
  params: z.ZodObject;
  /** The residue this step removes: it is `changed` only when none of it is left. */
  owns(f: Finding): boolean;
  /** Views that show the step's work and whatever it disturbs: re-probed after its actions, in the same round trip. */
  views: readonly View[];
  /**
   * Where its actions change files (path prefixes; [] for a step that changes only the kernel's
   * state or services). A step that does not say cannot run `parallel:` with another: what it touches is unknown.
   */
  paths?: readonly string[];
  /** The steps that must have finished before this one when both run: the design's order (docs/design.md#the-order-of-a-reset). */
  follows?: readonly string[];
  plan(s: NodeState, ctx: StepContext): Action[];
  /** The state this step leaves, as the client can predict it: --check plans the next step on it. */
  after(s: NodeState, ctx: StepContext): NodeState;
  /** An interlock: a reason to refuse the whole host before anything changes. */
  refuse?(s: NodeState, ctx: StepContext): string | undefined;
  /** How long its actions may take on the node. */
  timeoutSec?(ctx: StepContext): number;
  /** Probe its views even when it has nothing to do: the final verify trusts no earlier view. */
  reprobe?: boolean;
  /** Fail when an action exits non-zero even if no residue is left (a backup, a shell step). */
  mustSucceed?: boolean;
  /**
   * A cluster-side step (drain, etcd member, Node removal): its work goes through the
   * Kubernetes API or an etcd member that stays, not the node's scripts. Its `plan`
   * is empty; `run` does the work (in --check: says what it would do) and judges it.
   */
  cluster?: ClusterWork;
  /** Client-side work after the actions ran (the backup's copy to the operator); throwing fails the step. */
  afterApply?(exec: (script: string) => Promise<string>, ctx: StepContext): Promise<string | undefined>;
}

export interface ClusterWork {
  /**
   * An interlock, asked before anything changes on any side; `s` is undefined when the host is down (--node-is-down).
   * Every built-in cluster step's refusal begins with the Node interlock (steps/cluster.ts): the engine asks nothing of the Node itself.
   */
  refuse?(c: ClusterContext, s: NodeState | undefined): Promise<string | undefined>;
  run(c: ClusterContext, s: NodeState | undefined): Promise<ClusterOutcome>;
}

export interface ClusterOutcome {
  /** What was done (or in --check would be): one line each, with the API request or command as its `script`. */
  actions: { what: string; script: string }[];
  /** Why the step failed; its actions up to there were done. */
  failed?: string;
  warnings?: string[];
}

export type StepStatus = 'ok' | 'changed' | 'failed' | 'skipped';

export interface ActionResult extends Action {
  /** Exit status; undefined in --check, or when the guard said there was nothing to do. */
  code?: number;
  /** The first and last lines of what it printed. */
  output?: string;
  skipped?: boolean;
  ms?: number;
}

export interface StepResult {
  name: string;
  status: StepStatus;
  /** The playbook's `parallel:` group it ran in, side by side with the group's other steps. */
  parallel?: string;
  actions: ActionResult[];
  /** The step's residue still on the node afterwards (failed), or found in --check. */
  left: Finding[];
  /** Why it failed or was skipped, in one line. */
  reason?: string;
  ms: number;
}

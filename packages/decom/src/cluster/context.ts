/**
 * What a cluster-side step works with: the API's typed clients, the Node the host
 * is, the run's flags, and the other etcd hosts it may ask. Types only: the engine,
 * the steps and src/cluster all use them, so they sit below all three.
 */
import type { ApiregistrationV1Api, AppsV1Api, CertificatesV1Api, CoordinationV1Api, CoreV1Api, PolicyV1Api, StorageV1Api, V1Node } from '@kubernetes/client-node';
import type { Host } from '../inventory/index.js';
import type { Transport } from '../transport/types.js';

/** A GET of an API path with its query and Accept header, answered as parsed JSON. */
export type ApiGet = (path: string, o?: { query?: Record<string, string>; accept?: string }) => Promise<unknown>;

export interface Kube {
  core: CoreV1Api;
  apps: AppsV1Api;
  storage: StorageV1Api;
  policy: PolicyV1Api;
  certificates: CertificatesV1Api;
  coordination: CoordinationV1Api;
  /** The APIServices (the audit: why a namespace cannot be emptied). */
  registration: ApiregistrationV1Api;
  /** Any path as JSON (discovery, metadata-only lists): what no typed client covers. */
  get: ApiGet;
  /** The API server's URL, for messages. */
  server: string;
}

/** The decommission's flags. */
export interface DecommissionOptions {
  drainTimeoutSec: number;
  force: boolean;
  deleteEmptyDirData: boolean;
  disableEviction: boolean;
  /** kubectl drain's --grace-period: each pod's own when undefined. */
  gracePeriodSec?: number;
  /** kubectl drain's --pod-selector: only the pods it selects are drained. */
  podSelector?: string;
  /** kubectl drain's --skip-wait-for-delete-timeout: a pod deleted longer ago than this is neither evicted nor waited for (0: off). */
  skipWaitForDeleteTimeoutSec: number;
  /** Drain even when its pods have no Node to go to: they go Pending (kubectl never asks). */
  allowPending: boolean;
  /** The host is confirmed off: taint it out-of-service instead of draining, and leave the node side alone. */
  nodeIsDown: boolean;
  allowQuorumLoss: boolean;
  allowLastControlPlane: boolean;
  /** Decommission a Node that holds the only copy of local PersistentVolumes' data (cluster/local-data.ts): they are named, not refused. */
  allowLocalData: boolean;
}

export interface ClusterContext {
  kube: Kube;
  host: Host;
  /** The Node this host is: decom_node_name, kube_override_hostname, else the inventory name. */
  nodeName: string;
  /** Whether the Node's name comes from the inventory's variables (then the hostname need not match it). */
  nodeNamed: boolean;
  options: DecommissionOptions;
  /** The Node names this run removes (every target): none of them counts as a place pods can go. */
  leaving: ReadonlySet<string>;
  /** The inventory's etcd hosts other than this one, those that stay first: where the member is removed from. */
  etcdPeers: Host[];
  /** The other targets of this run that are etcd hosts: their members count as removed when quorum is judged. */
  etcdLeaving: Host[];
  /** Runs one etcd membership change at a time across the run. */
  etcdSerial<T>(work: () => Promise<T>): Promise<T>;
  /** A connection to another host (an etcd member that stays), opened on demand, over SSH. */
  connect(host: Host): Promise<Transport>;
  check: boolean;
  runId: string;
  /** On the operator's machine: this host's backup folder (the etcd snapshot goes there). */
  operatorBackupDir: string;
  /** One line of progress: the progress view and the journal. */
  log(line: string): void;
  /** Writes an event of the step to the run's journal now (set by the engine): what a rerun must know if this run is killed. */
  record?(event: Record<string, unknown> & { event: string }): void;
  /**
   * The events of that name the journal holds for this host (set by the engine): this run's, then those of
   * the runs it finishes (a killed run whose lock it took over, and the one that run finished, …).
   */
  recorded?(event: string): Record<string, unknown>[];
  /** The Node as the interlocks read it (undefined: not registered, or gone already). */
  node?: V1Node;
}

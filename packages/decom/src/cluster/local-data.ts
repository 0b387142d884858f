/**
 * The decommission's local-data interlock: the PersistentVolumes whose data is on
 * this Node's disk alone (rules/local-volumes.ts: a local kind, its required node
 * affinity selecting this Node and no other), in every phase, each with its claim and
 * the pods of the Node that use it. Any of them refuses the decommission before
 * anything changes, unless --allow-local-data; then the run names them. A list the
 * API refuses (PersistentVolumes, Nodes) refuses too, unless --allow-local-data.
 * decom never deletes a PersistentVolume or a claim: their data, and the decision,
 * are the user's.
 */
import type { V1Node, V1PersistentVolume } from '@kubernetes/client-node';
import type { ClusterContext } from './context.js';
import { podsOn } from './drain.js';
import { errorLine } from './kubeconfig.js';
import { listNodes } from './node.js';
import { listAll } from './pages.js';
import { localVolumesOf, volumeLine, type LocalVolume } from '../rules/local-volumes.js';

export interface LocalDataVerdict {
  /** Why the decommission must not start (nothing has changed). */
  refusal?: string;
  /** With --allow-local-data: what the run names in its report and journal. */
  warnings: string[];
  volumes: LocalVolume[];
}

/** The verdict on this host's Node (read by the Node interlock into `c.node`; none registered: nothing to judge). */
export async function localDataVerdict(c: ClusterContext): Promise<LocalDataVerdict> {
  if (!c.node) return { warnings: [], volumes: [] };
  const allowed = c.options.allowLocalData;
  const unread = (what: string, e: unknown): LocalDataVerdict =>
    allowed
      ? { warnings: [`--allow-local-data: whether Node ${c.nodeName} holds the only copy of local data was not checked: listing ${what} failed: ${errorLine(e)}`], volumes: [] }
      : { refusal: `cannot tell whether Node ${c.nodeName} holds the only copy of local data: listing ${what} failed: ${errorLine(e)} (the decommission needs get and list on ${what.toLowerCase()}; or pass --allow-local-data)`, warnings: [], volumes: [] };
  let pvs: V1PersistentVolume[];
  let nodes: V1Node[];
  try {
    pvs = await listAll((p) => c.kube.core.listPersistentVolume(p));
  } catch (e) {
    return unread('PersistentVolumes', e);
  }
  try {
    nodes = await listNodes(c);
  } catch (e) {
    return unread('Nodes', e);
  }
  const volumes = localVolumesOf(c.nodeName, pvs, nodes, await podsOn(c.kube, c.nodeName));
  if (!volumes.length) return { warnings: [], volumes };
  const lines = volumes.map(volumeLine).join('; ');
  if (!allowed) {
    return {
      refusal: `Node ${c.nodeName} holds the only copy of local data: ${lines}; it stays on the node's disk and leaves the cluster with the node, and the volumes stay bound to a Node that is gone; move the data first, or pass --allow-local-data if that is the intent`,
      warnings: [],
      volumes,
    };
  }
  return { warnings: [`--allow-local-data: the data of these local volumes leaves the cluster with Node ${c.nodeName} (decom deletes no PersistentVolume or claim): ${lines}`], volumes };
}

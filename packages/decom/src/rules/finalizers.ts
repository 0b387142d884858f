/**
 * What normally removes a finalizer: the finalizers Kubernetes itself and widely run
 * projects define, each with the controller that removes it and when. An object stuck
 * in deletion waits on exactly these; the audit's finding says which, so the operator
 * knows whose controller to look at before anyone removes a finalizer by hand.
 *
 * A finalizer of no entry is named by its domain, marked as a guess: by convention a
 * finalizer is "DOMAIN/NAME" of the controller that adds it.
 */

interface Known {
  /** The exact finalizer, or its prefix when it ends in "/" (one per CSI driver). */
  name: string;
  removedBy: string;
}

const KNOWN: Known[] = [
  // Kubernetes: kube-controller-manager, kube-apiserver and the storage sidecars.
  { name: 'kubernetes', removedBy: "the namespace controller (kube-controller-manager), once the namespace's content is deleted" },
  { name: 'foregroundDeletion', removedBy: 'the garbage collector (kube-controller-manager), once every dependent that blocks owner deletion is deleted' },
  { name: 'orphan', removedBy: "the garbage collector (kube-controller-manager), once it has removed this owner from its dependents' ownerReferences" },
  { name: 'kubernetes.io/pvc-protection', removedBy: 'the PVC protection controller (kube-controller-manager), once no pod uses the claim' },
  { name: 'kubernetes.io/pv-protection', removedBy: 'the PV protection controller (kube-controller-manager), once no claim is bound to the volume' },
  { name: 'batch.kubernetes.io/job-tracking', removedBy: "the Job controller (kube-controller-manager), once it has counted the pod's outcome" },
  { name: 'resource.kubernetes.io/delete-protection', removedBy: 'the resource claim controller (kube-controller-manager), once no pod reserves the claim' },
  { name: 'service.kubernetes.io/load-balancer-cleanup', removedBy: "the service controller (cloud-controller-manager), once the cloud's load balancer is deleted" },
  { name: 'customresourcecleanup.apiextensions.k8s.io', removedBy: 'the CRD finalizer controller (kube-apiserver), once every custom resource of the definition is deleted' },
  { name: 'external-attacher/', removedBy: "the CSI driver's external-attacher, once the volume is detached from the node (ControllerUnpublishVolume)" },
  { name: 'external-provisioner.volume.kubernetes.io/finalizer', removedBy: "the CSI driver's external-provisioner, once the volume is deleted in the storage backend" },
  { name: 'snapshot.storage.kubernetes.io/', removedBy: 'the snapshot controller (external-snapshotter), once the snapshot is no longer a source or bound' },
  // Widely run projects.
  { name: 'resources-finalizer.argocd.argoproj.io', removedBy: "Argo CD's application controller, once the application's resources are deleted" },
  { name: 'finalizers.fluxcd.io', removedBy: 'the Flux controller of the object, once it has cleaned up what it applied' },
  { name: 'karpenter.sh/termination', removedBy: "Karpenter's termination controller, once the node is drained and its instance terminated" },
  { name: 'cluster.cluster.x-k8s.io', removedBy: "Cluster API's cluster controller, once the cluster's machines and infrastructure are deleted" },
  { name: 'machine.cluster.x-k8s.io', removedBy: "Cluster API's machine controller, once the node is drained and the machine's infrastructure deleted" },
  { name: 'finalizer.managedresource.crossplane.io', removedBy: "the Crossplane provider of the resource, once the external resource is deleted" },
  { name: 'service.k8s.aws/resources', removedBy: 'the AWS Load Balancer Controller, once the load balancer is deleted' },
  { name: 'ingress.k8s.aws/resources', removedBy: 'the AWS Load Balancer Controller, once the load balancer is deleted' },
  { name: 'elbv2.k8s.aws/resources', removedBy: 'the AWS Load Balancer Controller, once the target group binding is deleted' },
  { name: 'gateway-exists-finalizer.gateway.networking.k8s.io', removedBy: 'the Gateway API implementation, once no Gateway uses the class' },
];

/** What removes `finalizer`, and whether that is known or a guess from its domain. */
export function finalizerRemover(finalizer: string): { removedBy: string; guess: boolean } {
  const known = KNOWN.find((k) => (k.name.endsWith('/') ? finalizer.startsWith(k.name) : finalizer === k.name));
  if (known) return { removedBy: known.removedBy, guess: false };
  const domain = finalizer.includes('/') ? finalizer.slice(0, finalizer.indexOf('/')) : '';
  return domain
    ? { removedBy: `a controller of ${domain} (a guess from the finalizer's domain)`, guess: true }
    : { removedBy: 'the controller that added it (a guess: the finalizer names no domain)', guess: true };
}

/** "FINALIZER: removed by …", as a finding's evidence line. */
export const finalizerLine = (finalizer: string): string => `finalizer ${finalizer}: removed by ${finalizerRemover(finalizer).removedBy}`;

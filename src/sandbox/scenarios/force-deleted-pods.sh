# Pods force-deleted from the API while the node was away: their sandboxes are gone
# from containerd, but the pod dirs keep their volume mounts, the cni-* netns keep
# their veths on cni0, and the IPAM leases still name the dead sandboxes. One pod
# on the pod network is alive, as on any busy node.
import_image
kube_files
svc_start kubelet
net_pod flannel "coredns-$(hex 10)-$(hex 5)" kube-system coredns live /bin/httpd -f -p 53 >/dev/null
for i in 1 2; do
  set -- $(net_pod flannel "web-$(hex 10)-$(hex 5)" default web dead)
  pod_volumes "$1"
done
not_kubernetes
wait_port 10250

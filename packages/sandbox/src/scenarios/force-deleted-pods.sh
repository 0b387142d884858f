# Pods force-deleted while their node's runtime lost its state: they ran through CRI
# (a hostPort each, an emptyDir, a token and a CSI volume), then the kubelet stopped,
# containerd died with its shims and pod processes (no CNI DEL) and came back with
# its state wiped. Their pod dirs keep their volume mounts, their cni-* netns keep
# their veths on cni0, their host-local leases, portmap and masquerade chains and
# pod cgroups stay, while the runtime knows none of them. The kubelet then starts
# again and runs a live pod on the pod network beside the residue.
import_image
kube_files
svc_start kubelet
for port in 18081 18082; do
  set -- $(run_pod "web-$(hex 10)-$(hex 5)" default web --host-port "$port" --memory-volume cache:/cache -- /bin/httpd -f -p "$port")
  pod_volumes "$1"
done
lose_runtime_state
svc_start kubelet
run_pod "coredns-$(hex 10)-$(hex 5)" kube-system coredns -- /bin/httpd -f -p 53 >/dev/null
not_kubernetes
wait_port 10250

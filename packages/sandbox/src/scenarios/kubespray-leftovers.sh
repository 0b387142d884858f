# What kubespray's remove-node.yml / reset leaves (kubespray#11627): the kubelet and
# its static pods still running in containerd, DaemonSet pods, pods on the pod
# network (one with a hostPort) with their netns, veths, leases, CNI chains and
# volume mounts, Calico's traces of a pod, CNI links, KUBE-* rules in
# both iptables backends, kube-proxy's nftables tables, ipsets, Calico's BIRD routes,
# Cilium's pinned maps, every file, and what kubespray installed (the purge tier).
import_image
kube_files
if has_role control-plane; then control_plane_static_pods; else static_pod nginx-proxy /bin/httpd -f -p 127.0.0.1:6443; fi
svc_start kubelet
host_pod "kube-proxy-$(hex 5)" kube-system kube-proxy /bin/sh -c "mkdir -p /srv && printf ipvs > /srv/proxyMode && httpd -p 127.0.0.1:10249 -h /srv && exec httpd -f -p 10256" >/dev/null
host_pod "calico-node-$(hex 5)" kube-system calico-node /bin/httpd -f -p 127.0.0.1:9099 >/dev/null
set -- $(run_pod "coredns-$(hex 10)-$(hex 5)" kube-system coredns --memory-volume cache:/cache -- /bin/httpd -f -p 53)
pod_volumes "$1"
run_pod "web-$(hex 10)-$(hex 5)" default web --host-port 18080 -- /bin/httpd -f -p 18080 >/dev/null
calico_pod_traces >/dev/null
cni_links
kube_iptables
kube_nftables
kube_ipsets
bird_routes
cilium_pins
kubespray_install
not_kubernetes
wait_control_plane_ports
wait_port 10250
wait_port 10256

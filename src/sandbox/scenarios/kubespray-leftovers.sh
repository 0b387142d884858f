# What kubespray's remove-node.yml / reset leaves (kubespray#11627): the kubelet and
# its static pods still running in containerd, DaemonSet pods, pods on the pod
# network with their netns, veths and volume mounts, CNI links, KUBE-* rules in
# both iptables backends, kube-proxy's nftables tables, ipsets, Calico's BIRD routes,
# Cilium's pinned maps, every file, and what kubespray installed (the purge tier).
import_image
kube_files
if has_role control-plane; then control_plane_static_pods; else static_pod nginx-proxy /bin/httpd -f -p 127.0.0.1:6443; fi
svc_start kubelet
host_pod "kube-proxy-$(hex 5)" kube-system kube-proxy /bin/sh -c "httpd -p 127.0.0.1:10249 && exec httpd -f -p 10256" >/dev/null
host_pod "calico-node-$(hex 5)" kube-system calico-node /bin/httpd -f -p 127.0.0.1:9099 >/dev/null
set -- $(net_pod flannel "coredns-$(hex 10)-$(hex 5)" kube-system coredns live /bin/httpd -f -p 53)
pod_volumes "$1"
net_pod calico "web-$(hex 10)-$(hex 5)" default web live /bin/httpd -f -p 8080 >/dev/null
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

# A member of the sandbox's cluster, as kubeadm join leaves it: /etc/kubernetes and
# the kubelet's state, the control plane's static pods on control-plane nodes, and
# the kubelet registered with the sandbox's API, running what the API binds to it.
# The cluster's objects (DaemonSets, Deployments, PDBs, volumes) are planted from the
# host afterwards (cluster.ts). Without API_KUBECONFIG (an API-less sandbox) the
# kubelet runs standalone.
import_image
kube_files
if has_role control-plane; then control_plane_static_pods; fi
join_cluster
not_kubernetes
if has_role control-plane; then wait_control_plane_ports; fi
wait_port 10250

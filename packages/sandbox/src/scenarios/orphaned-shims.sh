# A half-done reset: the manifests are gone and kubelet is stopped, then containerd
# was stopped (kubespray's unit has KillMode=process, so its shims live on) and one
# shim was killed too: its container, re-parented to PID 1, still holds the port.
# Nothing the runtime knows can free these ports any more.
import_image
kube_files
if has_role control-plane; then control_plane_static_pods; else static_pod nginx-proxy /bin/httpd -f -p 127.0.0.1:6443; fi
svc_start kubelet
host_pod "kube-proxy-$(hex 5)" kube-system kube-proxy /bin/sh -c "mkdir -p /srv && printf iptables > /srv/proxyMode && httpd -p 127.0.0.1:10249 -h /srv && exec httpd -f -p 10256" >/dev/null
not_kubernetes
wait_control_plane_ports
wait_port 10256
svc_stop kubelet
rm -f /etc/kubernetes/manifests/*.yaml
svc_stop containerd
# The API server's (or nginx-proxy's) shim: find it by its full command line, as
# the process name is cut to "containerd-shim".
victim=$(ss -Hltnp "sport = :6443" | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1)
shim=$(awk '{print $4}' "/proc/$victim/stat")
case $(tr '\0' ' ' < "/proc/$shim/cmdline") in
  *containerd-shim*) kill -9 "$shim" ;;
  *) echo "parent of the :6443 holder is not a shim" >&2; exit 1 ;;
esac
sleep 0.2
wait_port 6443 5

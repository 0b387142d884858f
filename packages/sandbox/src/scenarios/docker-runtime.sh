# A cri-dockerd node: Kubernetes' containers are Docker containers named k8s_*
# (k8s_POD_* are the sandboxes); the user's own Docker container must survive.
import_image
svc_start docker
n=100; until docker info >/dev/null 2>&1; do n=$((n - 1)); [ $n -gt 0 ] || { echo "dockerd did not start" >&2; exit 1; }; sleep 0.1; done
docker load -i /var/lib/decom-sandbox/busybox.tar >/dev/null
# The pod sandboxes' pause image (in the loaded archive), a reference only Kubernetes uses; and an image of the user's, unused.
t=$(mktemp -d); echo tools > "$t/README"; tar -c -C "$t" . | docker import - app/tools:1 >/dev/null; rm -rf "$t"
# cri-dockerd creates containers by image ID, not by the reference the kubelet pulled.
PAUSE_ID=$(docker image inspect -f '{{.Id}}' registry.k8s.io/pause:3.9)
kube_files
k8s_docker_pod() { # pod namespace container cmd...
  pod=$1 ns=$2 c=$3; shift 3
  uid=$(uuid)
  labels="--label io.kubernetes.pod.name=$pod --label io.kubernetes.pod.namespace=$ns --label io.kubernetes.pod.uid=$uid"
  # shellcheck disable=SC2086
  docker run -d --network host --cgroup-parent "/kubepods/besteffort/pod$uid" $labels \
    --label io.kubernetes.docker.type=podsandbox --name "k8s_POD_${pod}_${ns}_${uid}_0" "$PAUSE_ID" /bin/sleep 2147483647 >/dev/null
  # shellcheck disable=SC2086
  docker run -d --network host --cgroup-parent "/kubepods/besteffort/pod$uid" $labels \
    --label io.kubernetes.docker.type=container --label io.kubernetes.container.name="$c" \
    --name "k8s_${c}_${pod}_${ns}_${uid}_0" "$PAUSE_ID" "$@" >/dev/null
}
if has_role control-plane; then
  k8s_docker_pod "kube-apiserver-$NODE_NAME" kube-system kube-apiserver /bin/httpd -f -p 6443
fi
k8s_docker_pod "kube-proxy-$(hex 5)" kube-system kube-proxy /bin/sh -c "mkdir -p /srv && printf iptables > /srv/proxyMode && httpd -p 127.0.0.1:10249 -h /srv && exec httpd -f -p 10256"
docker run -d --network none --name app-registry "$IMAGE" /bin/sleep 2147483647 >/dev/null
kube_iptables
not_kubernetes
wait_port 10256
if has_role control-plane; then wait_port 6443; fi

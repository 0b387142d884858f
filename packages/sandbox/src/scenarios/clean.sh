# A node that was reset properly: no kubelet unit, no Kubernetes container, mount,
# netns, link, rule or file. Only what is not Kubernetes' remains; a verify or an
# audit that reports anything here is wrong.
import_image
rm -f /etc/systemd/system/kubelet.service
if [ "$INIT" = systemd ]; then systemctl daemon-reload; fi
not_kubernetes

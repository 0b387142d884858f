#!/usr/bin/env bash
# decom audit's API side on a cluster of many objects, against kubectl listing the same
# objects in the same invocation: the sandbox API seeded in bulk with CONFIGMAPS
# ConfigMaps and CUSTOM custom resources (one CRD), one node joined. Each side is timed
# from the API's own audit log, from its first request received to its last response
# sent: the audit's discovery and every list it makes (the six read in full, every other
# resource metadata-only), and `kubectl get configmaps,widgets -A -o name
# --chunk-size=500` with its discovery (a cold cache each run). Also the audit's peak
# memory (its whole process, the lists' worker thread included).
#   bench/audit-api.sh [CONFIGMAPS] [CUSTOM] [RUNS]   (default 5000 500 5; needs root and a build)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
cms=${1:-5000} crs=${2:-500} runs=${3:-5}
bench_requires
kubectl=$(decom sandbox versions --which kubectl 2>/dev/null || command -v kubectl || true)
[ -n "$kubectl" ] || bench_fail "needs kubectl for the baseline"

sandbox_work
decom sandbox down >/dev/null
echo "bringing up 1 node joined to the sandbox API, then seeding $cms ConfigMaps and $crs Widgets..." >&2
decom sandbox up --nodes 1 --api >/dev/null
export KUBECONFIG=$dir/kubeconfig
"$kubectl" apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
EOF
"$kubectl" wait --for=condition=Established crd/widgets.example.com --timeout=30s >/dev/null
# In bulk: the API's own create, 32 requests at a time, as a controller fills a cluster.
node --input-type=module - "$cms" "$crs" <<'EOF'
import { ApiClient } from './dist/api/client.js';
const [cms, crs] = process.argv.slice(2).map(Number);
const api = ApiClient.fromKubeconfig(process.env.KUBECONFIG);
const make = [
  ...Array.from({ length: cms }, (_, i) => ['/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, labels: { app: `a${i % 50}` } }, data: { 'config.yaml': `key: value-${i}\n`.repeat(8) } }]),
  ...Array.from({ length: crs }, (_, i) => ['/apis/example.com/v1/namespaces/default/widgets', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: `w-${i}` }, spec: { size: i } }]),
];
for (let i = 0; i < make.length; i += 32) await Promise.all(make.slice(i, i + 32).map(([path, body]) => api.must('POST', path, body)));
EOF

log=$dir/api/audit.log
# span FROM AGENT: seconds from the first request received to the last response sent, of the log's lines past
# byte FROM whose User-Agent starts with AGENT.
span() {
  tail -c +"$(($1 + 1))" "$log" | node -e '
    const agent = process.argv[1]; let first = Infinity, last = 0, n = 0;
    for (const l of require("fs").readFileSync(0, "utf8").split("\n")) {
      if (!l) continue;
      const e = JSON.parse(l);
      if (!String(e.userAgent).startsWith(agent)) continue;
      n++; first = Math.min(first, Date.parse(e.requestReceivedTimestamp)); last = Math.max(last, Date.parse(e.stageTimestamp));
    }
    console.log(((last - first) / 1000).toFixed(3), n);' "$2"
}
d=() k=() mem=() reqs_d=0 reqs_k=0
for i in $(seq 1 "$runs"); do
  from=$(stat -c %s "$log")
  code=0
  /usr/bin/time -f %M -o "$work/rss" node ../decom/dist/cli.js audit "$dir/hosts.yaml" --output json > "$work/audit.json" || code=$?
  [ "$code" -le 1 ] || { echo "audit exited $code (expected 0 or 1: every host and the API checked)" >&2; exit 1; }
  sleep 0.2 # the API writes a line when the response is sent
  read -r secs n < <(span "$from" decom/)
  d+=("$secs") reqs_d=$n mem+=("$(cat "$work/rss")")
  from=$(stat -c %s "$log")
  "$kubectl" get configmaps,widgets -A -o name --chunk-size=500 --cache-dir "$work/kcache-$i" > "$work/kubectl.out"
  sleep 0.2
  read -r secs n < <(span "$from" kubectl)
  k+=("$secs") reqs_k=$n
done
listed=$(wc -l < "$work/kubectl.out")
dm=$(printf '%s\n' "${d[@]}" | median) km=$(printf '%s\n' "${k[@]}" | median) mm=$(printf '%s\n' "${mem[@]}" | median)
echo
printf 'objects: %s ConfigMaps and %s Widgets (kubectl listed %s), runs: %s (medians)\n' "$cms" "$crs" "$listed" "$runs"
printf '%-60s %7s s   (%s requests; runs: %s)\n' "decom audit, the API side (discovery + every list)" "$dm" "$reqs_d" "${d[*]}"
printf '%-60s %7s s   (%s requests; runs: %s)\n' "kubectl get configmaps,widgets -A -o name --chunk-size=500" "$km" "$reqs_k" "${k[*]}"
printf '%-60s %7s x   (target <= 2)\n' "ratio decom / kubectl" "$(awk -v a="$dm" -v b="$km" 'BEGIN { printf "%.2f", a / b }')"
printf '%-60s %7s MiB (runs: %s KiB)\n' "decom audit, peak memory (max RSS)" "$(awk -v m="$mm" 'BEGIN { printf "%.0f", m / 1024 }')" "${mem[*]}"

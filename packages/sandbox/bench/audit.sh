#!/usr/bin/env bash
# decom audit of a fleet of sandbox nodes joined to the sandbox's API, against the
# baseline run in the same invocation on the same nodes: a plain OpenSSH fan-out of
# the very same probe script (`ssh host sh -s < probe`, every host in parallel) with
# one `kubectl get pods -A -o json` beside it, i.e. what the probe and the API's pod
# list cost with no tool around them. Also counts the requests the API served to the
# audit (its apiserver_request_total): one set of lists per run, never one per node.
# Once per containerd version (the sandbox's --containerd), each against its own
# baseline; then how decom's ratio on each compares with the last's.
#   bench/audit.sh [NODES] [RUNS] [VERSIONS]   (default 100 nodes, 5 runs each, "2 1.6"; needs root and a build)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
n=${1:-100} runs=${2:-5} versions=${3:-2 1.6}
bench_requires
# The baseline's kubectl: the one scripts/setup fetched for the tests, else the one on PATH.
kubectl=$(decom sandbox versions --which kubectl 2>/dev/null || command -v kubectl || true)
[ -n "$kubectl" ] || bench_fail "needs kubectl for the baseline"
kubectl() { "$kubectl" "$@"; }

sandbox_work
probe=$work/probe.sh out=$work/audit.json
declare -A decom_over_baseline
bench_version() {
  local rt=$1
  decom sandbox down >/dev/null
  # Every node joins the API (registers its Node, renews its Lease, mirrors its static pods).
  # A cluster scenario's workloads on 100 nodes (200 DaemonSet pods started at once, each
  # node with its own containerd) starve this 2-core machine before the bench can run;
  # BENCH_SCENARIO=etcd-restore-phantoms plants them where the machine can take it.
  scenario=${BENCH_SCENARIO:-}
  echo "bringing up $n nodes joined to the sandbox API on containerd $rt${scenario:+ (scenario $scenario)}..." >&2
  decom sandbox up --nodes "$n" ${scenario:+--scenario "$scenario"} --api --containerd "$rt" >/dev/null
  export KUBECONFIG=$dir/kubeconfig
  node -e 'import("../decom/dist/probes/script.js").then((m) => process.stdout.write(m.probeScript("bench0000", m.AUDIT_VIEWS)))' > "$probe"
  read_addrs

  # The baseline: the probe on every node at once, and the API's pods listed once, together.
  baseline() {
    fanout "$probe" sh -s
    kubectl get pods -A -o json > /dev/null &
    wait
  }
  # The floor under both: the same logins running nothing.
  logins() { fanout /dev/null sh -s; wait; }
  audit_all() {
    local code=0
    decom audit "$dir/hosts.yaml" --output json > "$out" || code=$?
    [ "$code" -le 1 ] || { echo "audit exited $code (expected 0 or 1: every host and the API checked)" >&2; exit 1; }
  }
  # The API's count of what decom listed (its requests say User-Agent: decom/VERSION).
  lists() { kubectl get --raw /metrics | awk '/^apiserver_request_total\{verb="LIST".*client="decom"/ { split($0, r, /resource="/); split(r[2], q, /"/); c[q[1]] += $NF } END { for (k in c) print k, c[k] }' | sort; }

  # Where the time goes (lib.sh's measure): the client side (decom, or the ssh clients and
  # kubectl) and the nodes (their kubelets and the API too).
  # One discarded round while the fresh nodes settle, then alternate which goes first.
  d=() b=() z=(); measure d audit_all; measure b baseline; d=() b=()
  before=$(lists)
  for i in $(seq 1 "$runs"); do
    if [ $((i % 2)) = 1 ]; then measure d audit_all; measure b baseline; else measure b baseline; measure d audit_all; fi
    measure z logins
  done
  after=$(lists)
  findings=$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(r.hosts.reduce((s, h) => s + h.findings.length, 0) + r.cluster.length)' "$out")
  pods=$(kubectl get pods -A -o name | wc -l)
  line() { printf '%-52s %6s s   client %5s CPU-s, nodes %6s CPU-s   (runs: %s)\n' "$1" "$(col 1 "${@:2}")" "$(col 2 "${@:2}")" "$(col 3 "${@:2}")" "$(walls "${@:2}")"; }
  echo
  printf 'containerd %s, nodes: %s, pods in the API: %s, findings: %s, runs: %s (medians)\n' "$rt" "$n" "$pods" "$findings" "$runs"
  line "decom audit (probes + the API's lists)" "${d[@]}"
  line "OpenSSH fan-out of the probe + kubectl get pods -A" "${b[@]}"
  decom_over_baseline[$rt]=$(awk -v a="$(col 1 "${d[@]}")" -v b="$(col 1 "${b[@]}")" 'BEGIN { printf "%.2f", a / b }')
  printf '%-52s %6s x   (target <= 1.2)\n' "ratio decom / baseline" "${decom_over_baseline[$rt]}"
  line "OpenSSH fan-out of nothing (logins)" "${z[@]}"
  # The floor beside the ratio: the baseline (the same probe fanned out, and the pods' list), and the logins alone.
  printf '%-52s %s; above the logins alone %s\n' "floor: decom above the baseline" "$(above "$(col 1 "${d[@]}")" "$(col 1 "${b[@]}")")" "$(above "$(col 1 "${d[@]}")" "$(col 1 "${z[@]}")")"
  # Requests per run, by resource, from the API's own counters.
  join -a 2 -e 0 -o 0,1.2,2.2 <(echo "$before") <(echo "$after") | awk -v runs="$runs" -v n="$n" '
    { per = ($3 - $2) / runs; total += per; s = s sprintf("%s%s %g", sep, $1, per); sep = ", " }
    END { printf "%-52s %6g     (%s; %g per node)\n", "API list requests per audit", total, s, total / n }'
}
for rt in $versions; do bench_version "$rt"; done
# The same machine, the same invocation: decom's overhead over the baseline on each version against the last one's.
against_last '%-52s %6s x   (target <= 1.3)\n' '(decom/baseline on %s) / (on %s)' decom_over_baseline $versions

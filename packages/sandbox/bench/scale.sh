#!/usr/bin/env bash
# One node of a large cluster in kube-proxy's iptables mode (`sandbox up --services N`,
# default 20,000 Services: ~100,000 rules in ~40,000 chains), against the baseline run
# in the same invocation on the same node: the node's own iptables-save of both
# backends. Prints decom verify's time against it (target: no more than save + 2 s),
# the reset's firewall step (target <= 10 s), and the whole reset (target <= verify + 10 s:
# one firewall dump per run, the teardown's changes read again from the CNI's chains only).
#   bench/scale.sh [SERVICES] [RUNS]      (default 20000, 3 runs; needs root and a build)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
n=${1:-20000} runs=${2:-3}
bench_requires
sandbox_work
decom sandbox down >/dev/null
echo "bringing up 1 node with kubespray-leftovers and $n Services..." >&2
decom sandbox up --nodes 1 --scenario kubespray-leftovers --services "$n" >/dev/null
on() { decom sandbox ssh node1 "$@"; }
rules=$(on 'iptables-save 2>/dev/null | grep -c "^-A"') chains=$(on 'iptables-save 2>/dev/null | grep -c "^:"')
save=() verify=()
for _ in $(seq 1 "$runs"); do
  t0=$(now); on 'iptables-nft-save >/dev/null 2>&1; iptables-legacy-save >/dev/null'; t1=$(now); save+=("$(secs "$t0" "$t1")")
  t0=$(now); decom verify "$dir/hosts.yaml" node1 >/dev/null || true; t1=$(now); verify+=("$(secs "$t0" "$t1")")
done
before=$(on "iptables-save 2>/dev/null | grep -E 'APP-|app:'; iptables-legacy-save | grep -E 'APP-|app:'")
t0=$(now); decom run "$dir/hosts.yaml" node1 --playbook reset --yes --state-dir "$work/state" >/dev/null 2>&1; t1=$(now)
fw=$(node -e 'for (const l of require("fs").readFileSync(process.argv[1], "utf8").split("\n")) { if (!l) continue; const e = JSON.parse(l); if (e.event === "step" && e.step === "firewall") console.log((e.ms / 1000).toFixed(2)); }' "$work"/state/runs/*.jsonl)
after=$(on "iptables-save 2>/dev/null | grep -E 'APP-|app:'; iptables-legacy-save | grep -E 'APP-|app:'")
left=$(on 'iptables-save 2>/dev/null | grep -c -E "KUBE-|CNI-|cali|FLANNEL"; true')
m() { printf '%s\n' "$@" | median; }
printf 'one node, %s Services: %s rules in %s chains (iptables-nft), runs: %s (medians)\n' "$n" "$rules" "$chains" "$runs"
printf '%-44s %7s s\n' "iptables-save of both backends (baseline)" "$(m "${save[@]}")"
printf '%-44s %7s s   (target <= baseline + 2 s: %s s)\n' "decom verify node1" "$(m "${verify[@]}")" "$(awk -v b="$(m "${save[@]}")" 'BEGIN { printf "%.2f", b + 2 }')"
printf '%-44s %7s x\n' "ratio verify / save" "$(awk -v x="$(m "${verify[@]}")" -v y="$(m "${save[@]}")" 'BEGIN { printf "%.2f", x / y }')"
printf '%-44s %7s s   (target <= 10 s)\n' "reset: firewall step" "$fw"
printf '%-44s %7s s   (target <= verify + 10 s: %s s)\n' "reset: the whole run" "$(secs "$t0" "$t1")" "$(awk -v v="$(m "${verify[@]}")" 'BEGIN { printf "%.2f", v + 10 }')"
printf '%-44s %7s\n' "Kubernetes rules left" "$left"
printf '%-44s %7s\n' "other application's rules byte for byte" "$([ "$before" = "$after" ] && echo yes || echo NO)"

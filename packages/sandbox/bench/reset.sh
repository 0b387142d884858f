#!/usr/bin/env bash
# decom's reset of a fleet of dirty sandbox nodes (kubespray-leftovers), against the
# baselines run in the same invocation, each on freshly planted nodes: the same
# removals as a plain bash script over OpenSSH (bench/reference/reset.sh, every host
# in parallel), and, when Debian's ansible-core is installed, as an Ansible playbook
# (bench/reference/reset.yml, forks = nodes, pipelining). After each: what
# `decom verify` still finds. Once per containerd version (the sandbox's --containerd),
# each against its own baseline; then how decom's ratio on each compares with the last's.
#   bench/reset.sh [NODES] [RUNS] [VERSIONS]   (default 50 nodes, 1 run each, "2 1.6"; needs root and a build)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
n=${1:-50} runs=${2:-1} versions=${3:-2 1.6}
bench_requires

sandbox_work

fresh() {
  decom sandbox down >/dev/null
  echo "bringing up $n nodes with kubespray-leftovers on containerd $rt..." >&2
  decom sandbox up --nodes "$n" --scenario kubespray-leftovers --containerd "$rt" >/dev/null
  read_addrs
  sleep 2 # let the fresh nodes settle
}
# left: "FINDINGS on HOSTS hosts" still found by decom verify.
left() {
  decom verify "$dir/hosts.yaml" all --output json > "$work/left.json" || true
  node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1])); const dirty = r.hosts.filter((h) => !h.clean); console.log(`${dirty.reduce((s, h) => s + h.findings.length, 0)} findings on ${dirty.length} hosts`)' "$work/left.json"
}
run_decom() {
  local code=0
  decom run "$dir/hosts.yaml" all --allow-many --playbook reset --yes --state-dir "$work/state" > "$work/decom.out" 2>&1 || code=$?
  [ "$code" = 0 ] || { echo "decom run exited $code:" >&2; tail -5 "$work/decom.out" >&2; }
}
run_bash() { fanout bench/reference/reset.sh bash -s 2>/dev/null; wait; }
run_ansible() {
  ANSIBLE_PIPELINING=1 ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3 \
    ansible-playbook -i "$dir/hosts.yaml" -f "$n" bench/reference/reset.yml > "$work/ansible.out" 2>&1 || { echo "ansible-playbook failed:" >&2; tail -5 "$work/ansible.out" >&2; }
}
# Where the time goes (lib.sh's measure): the client side (decom, ssh, ansible) and the
# nodes (the removals themselves, sshd, and the nodes' own daemons).
# measure_fresh NAME FN: fresh nodes, then FN measured into the array NAME, and what is left.
measure_fresh() {
  fresh
  measure "$1" "$2"
  printf '%s\n' "$(left)" > "$work/$1.left"
}

# The containers step's time on the CRI path (no crictl on the nodes) with containerd
# running, and with it stopped under the pods (started for the removal, stopped again
# and waited for, so the re-probe asks no dying containerd): from the run's journal,
# median over the hosts. Few nodes: this is a per-node cost.
# last_journal: the journal of the latest decom run (decom run --state-dir "$work/state").
last_journal() { ls -t "$work"/state/runs/*.jsonl | head -1; }
containers_ms() {
  node -e 'const ms = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse)
    .filter((e) => e.event === "step" && e.step === "containers").map((e) => e.ms).sort((a, b) => a - b);
    console.log(((ms[Math.floor((ms.length - 1) / 2)] ?? NaN) / 1000).toFixed(2))' "$(last_journal)"
}
ctr_path() {
  local keep=$n c_up c_down
  n=$(( n < 4 ? n : 4 ))
  fresh; run_decom; c_up=$(containers_ms)
  fresh
  fanout /dev/null systemctl stop containerd; wait
  run_decom; c_down=$(containers_ms)
  printf 'containers step (CRI path, %s nodes, medians): containerd running %s s, stopped %s s   difference %s s   (target <= 3)\n' "$n" "$c_up" "$c_down" "$(secs "$c_up" "$c_down")"
  n=$keep
}

line() { printf '%-44s %7s s   client %6s CPU-s, nodes %6s CPU-s   left: %s\n' "$1" "$(col 1 "${@:3}")" "$(col 2 "${@:3}")" "$(col 3 "${@:3}")" "$(cat "$work/$2.left")"; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }
declare -A decom_over_bash
for rt in $versions; do
  d=() b=() a=() fl=()
  for _ in $(seq 1 "$runs"); do
    measure_fresh d run_decom
    fl+=("$(journal_floor "$(last_journal)" "${d[-1]%% *}")")
    measure_fresh b run_bash
    if command -v ansible-playbook >/dev/null; then measure_fresh a run_ansible; fi
  done
  echo
  printf 'containerd %s (%s), nodes: %s (kubespray-leftovers, systemd), runs: %s (medians)\n' "$rt" \
    "$(decom sandbox status --output json 2>/dev/null | node -e 'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => { const n = JSON.parse(s).nodes[0]; console.log(n ? `Debian ${n.runtime.containerd}` : "?") })')" "$n" "$runs"
  line "decom run --playbook reset" d "${d[@]}"
  line "plain bash reference over OpenSSH" b "${b[@]}"
  decom_over_bash[$rt]=$(ratio "$(col 1 "${d[@]}")" "$(col 1 "${b[@]}")")
  printf '%-44s %7s x   (target <= 1.1)\n' "ratio decom / bash" "${decom_over_bash[$rt]}"
  # The physical floor beside it (lib.sh's journal_floor): the hosts' own commands, and decom's time above the slowest's.
  whole=$(col 5 "${fl[@]}")
  printf '%-44s %7s s   median host %s s; decom above it: %s%s\n' "floor: the slowest host's own commands" "$(col 2 "${fl[@]}")" "$(col 1 "${fl[@]}")" \
    "$(above "$(col 1 "${d[@]}")" "$(col 2 "${fl[@]}")")" "$([ "$whole" = 0 ] || echo "; $whole host steps counted whole (no action times in the journal)")"
  if [ "${#a[@]}" -gt 0 ]; then
    line "Ansible playbook (forks $n, pipelining)" a "${a[@]}"
    printf '%-44s %7s x   (target >= 10)\n' "ratio Ansible / decom" "$(ratio "$(col 1 "${a[@]}")" "$(col 1 "${d[@]}")")"
  else
    echo "Ansible: not installed (apt-get install ansible-core to compare)"
  fi
  ctr_path
done
# The same machine, the same invocation: decom's overhead over bash on each version against the last one's.
against_last '%-44s %7s x   (target <= 1.3)\n' '(decom/bash on %s) / (decom/bash on %s)' decom_over_bash $versions

#!/usr/bin/env bash
# decom verify across a fleet of dirty sandbox nodes, against the baseline run in
# the same invocation on the same nodes: a plain OpenSSH fan-out of the very same
# probe script (`ssh host sh -s < probe`, every host in parallel), i.e. what the
# probe costs with no tool around it; and decom verify --ssh openssh, the same verify
# through the system's ssh (a ControlMaster per host). Also: how fast `--help` answers.
#   bench/verify.sh [NODES] [RUNS]      (default 50 nodes, 5 runs each; needs root and a build)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
n=${1:-50} runs=${2:-5}
bench_requires

decom sandbox down >/dev/null
echo "bringing up $n nodes with kubespray-leftovers..." >&2
decom sandbox up --nodes "$n" --scenario kubespray-leftovers >/dev/null
sandbox_work
probe=$work/probe.sh out=$work/verify.json
# The probe decom verify sends: every view, and the facts its report shows.
node -e 'import("../decom/dist/probes/script.js").then((m) => process.stdout.write(m.probeScript("bench0000", m.withFacts(m.ALL_VIEWS))))' > "$probe"
read_addrs

# probe_all SCRIPT: `ssh host sh -s < SCRIPT` on every node at once.
probe_all() { fanout "$1" sh -s; wait; }

# Where the time goes (lib.sh's measure): the client side, and the nodes: sshd, the probe,
# and ~0.15 core of idle daemons.
verify_all() {
  local code=0
  decom verify "$dir/hosts.yaml" all --output json "$@" > "$out" || code=$?
  [ "$code" = 1 ] || { echo "verify exited $code (expected 1: residue found)" >&2; exit 1; }
}
run_decom() { measure d verify_all; }
run_openssh() { measure o verify_all --ssh openssh; }
run_fanout() { measure f probe_all "$probe"; }
# The floor under both: the same logins running nothing.
run_floor() { measure z probe_all /dev/null; }

# One discarded round while the fresh nodes settle, then alternate which goes first.
d=() f=() z=() o=(); run_decom; run_fanout; run_openssh; d=() f=() o=()
for i in $(seq 1 "$runs"); do
  if [ $((i % 2)) = 1 ]; then run_decom; run_fanout; run_openssh; else run_openssh; run_fanout; run_decom; fi
  run_floor
done
findings=$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(r.hosts.reduce((s, h) => s + h.findings.length, 0))' "$out")
line() { printf '%-38s %6s s   client %5s CPU-s, nodes %5s CPU-s   (runs: %s)\n' "$1" "$(col 1 "${@:2}")" "$(col 2 "${@:2}")" "$(col 3 "${@:2}")" "$(walls "${@:2}")"; }
printf 'nodes: %s, findings: %s, runs: %s (medians)\n' "$n" "$findings" "$runs"
line "decom verify" "${d[@]}"
line "decom verify --ssh openssh" "${o[@]}"
line "OpenSSH fan-out of the same probe" "${f[@]}"
line "OpenSSH fan-out of nothing (logins)" "${z[@]}"
printf '%-38s %6s x   (target <= 1.1; %s nodes in <= 3 s)\n' "ratio decom / fan-out" "$(awk -v a="$(col 1 "${d[@]}")" -v b="$(col 1 "${f[@]}")" 'BEGIN { printf "%.2f", a / b }')" "$n"
printf '%-38s %6s x\n' "ratio decom --ssh openssh / fan-out" "$(awk -v a="$(col 1 "${o[@]}")" -v b="$(col 1 "${f[@]}")" 'BEGIN { printf "%.2f", a / b }')"
# The floor beside the ratios: the same probe fanned out, and the logins alone; decom's time above each.
floor() { printf '%-38s %s; above the logins alone %s\n' "$1" "$(above "$(col 1 "${@:2}")" "$(col 1 "${f[@]}")")" "$(above "$(col 1 "${@:2}")" "$(col 1 "${z[@]}")")"; }
floor "floor: decom above the fan-out" "${d[@]}"
floor "floor: --ssh openssh above the fan-out" "${o[@]}"

help() { local t0 t1; t0=$(now); decom "$@" > /dev/null; t1=$(now); secs "$t0" "$t1"; }
printf '%-38s %6s s   (target < 0.3)\n' "decom --help" "$(for _ in 1 2 3; do help --help; echo; done | median)"
printf '%-38s %6s s   (target < 0.3)\n' "decom verify --help" "$(for _ in 1 2 3; do help verify --help; echo; done | median)"

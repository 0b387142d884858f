#!/usr/bin/env bash
# A hostile node: one user's processes, each with a 100 KB argument (default 1,500 of
# them: 150 MB of command lines), against the baseline run in the same invocation on the
# same node before they start: `decom verify` of that one node. Prints the bytes decom
# received (the node's eth0 tx_bytes before and after), its peak memory (/usr/bin/time's
# %M) and its time, and each as a ratio of the clean node's (targets: under 16 MiB and
# 300 MB on the hostile node).
#   bench/hostile.sh [PROCESSES] [RUNS]      (default 1500, 3 runs; needs root and a build)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
n=${1:-1500} runs=${2:-3}
bench_requires
[ -x /usr/bin/time ] || bench_fail "needs /usr/bin/time (Debian's time package)"
sandbox_work
decom sandbox down >/dev/null
echo "bringing up 1 clean node..." >&2
decom sandbox up --nodes 1 --scenario clean >/dev/null
on() { decom sandbox ssh node1 "$@"; }
sent() { on 'cat /sys/class/net/eth0/statistics/tx_bytes'; }

# verify_once ARRAY: one `decom verify` of node1; appends "bytes peak-KiB seconds" to ARRAY.
verify_once() {
  local -n acc=$1
  local tx0 tx1 t0 t1 code=0
  tx0=$(sent) t0=$(now)
  /usr/bin/time -f %M -o "$work/peak" node ../decom/dist/cli.js verify "$dir/hosts.yaml" node1 > "$work/out" || code=$?
  t1=$(now) tx1=$(sent)
  [ "$code" -le 1 ] || { cat "$work/out" >&2; bench_fail "verify exited $code (expected 0 or 1)"; }
  acc+=("$((tx1 - tx0)) $(tail -n 1 "$work/peak") $(secs "$t0" "$t1")")
}

clean=() hostile=()
for _ in $(seq 1 "$runs"); do verify_once clean; done
echo "starting $n processes of nobody, each with a 100 KB argument..." >&2
# GNU sleep adds its arguments up: 100,000 zeros are 0 s. Ended by PID, also on failure.
pids=$(on "Z=\$(head -c 100000 /dev/zero | tr '\\0' 0); for i in \$(seq $n); do setpriv --reuid=65534 --regid=65534 --clear-groups sleep 3600 \"\$Z\" </dev/null >/dev/null 2>&1 & echo \$!; done" | tr '\n' ' ')
trap 'on "kill $pids 2>/dev/null; true"; decom sandbox down >/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 "$runs"); do verify_once hostile; done

mib() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1048576 }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k * 1024 / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
row() { printf '%-36s %12s %12s %10s\n' "$@"; }
printf 'one node, clean and with %s processes of a user, each with a 100 KB argument; runs: %s (medians)\n' "$n" "$runs"
row '' 'received' 'peak memory' 'time'
row 'decom verify, clean node' "$(mib "$(col 1 "${clean[@]}")") MiB" "$(mb "$(col 2 "${clean[@]}")") MB" "$(col 3 "${clean[@]}") s"
row 'decom verify, hostile node' "$(mib "$(col 1 "${hostile[@]}")") MiB" "$(mb "$(col 2 "${hostile[@]}")") MB" "$(col 3 "${hostile[@]}") s"
row 'ratio hostile / clean' "$(ratio "$(col 1 "${hostile[@]}")" "$(col 1 "${clean[@]}")")x" "$(ratio "$(col 2 "${hostile[@]}")" "$(col 2 "${clean[@]}")")x" "$(ratio "$(col 3 "${hostile[@]}")" "$(col 3 "${clean[@]}")")x"
printf '(targets on the hostile node: under 16 MiB received, under 300 MB of memory)\n'

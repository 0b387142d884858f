# The helpers the bench scripts in this folder share; sourced, not run. Each script
# sources it by a path taken from its own ($0), before it cds to packages/sandbox:
#   set -euo pipefail
#   source "$(dirname "$0")/lib.sh"
#   cd "$(dirname "$0")/.."
# The paths below are relative to packages/sandbox, where every function here runs.

# The script's name in its messages: bench/NAME.sh.
bench_name=bench/${0##*/}
# bench_fail MESSAGE: "bench/NAME.sh: MESSAGE" on stderr, then exit 2 (the bench cannot run here).
bench_fail() { echo "$bench_name: $*" >&2; exit 2; }
# bench_requires [BUILT]: root, and a build (BUILT: a file the build writes; default decom's CLI).
bench_requires() {
  [ "$(id -u)" = 0 ] || bench_fail "needs root"
  [ -f "${1:-../decom/dist/cli.js}" ] || bench_fail "run 'npm run build' first"
}

now() { date +%s.%N; }
# secs FROM TO [DECIMALS]: TO - FROM in seconds, to DECIMALS places (default 2).
secs() { awk -v a="$1" -v b="$2" -v p="${3:-2}" 'BEGIN { printf "%." p "f", b - a }'; }
# median: of the numbers on stdin, one a line (of an even count, the lower middle one).
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# col N ROW...: the median of field N of the ROWs (measure's "wall client-cpu node-cpu").
col() { printf '%s\n' "${@:2}" | awk -v c="$1" '{ print $c }' | median; }
# walls ROW...: the ROWs' first fields (their wall times), space-separated.
walls() { printf '%s\n' "$@" | awk '{ printf "%s%s", sep, $1; sep = " " }'; }

decom() { node ../decom/dist/cli.js "$@"; }
# The sandbox's folder: its state.json, hosts.yaml, kubeconfig, SSH key and known_hosts.
# The benchmarks use the default instance (its cgroup is decom-sandbox).
unset DECOM_SANDBOX_INSTANCE
dir=${DECOM_SANDBOX_DIR:-/run/decom/sandbox}
# sandbox_work: a scratch folder in work; at exit, the sandbox brought down and work removed.
sandbox_work() { work=$(mktemp -d); trap 'decom sandbox down >/dev/null; rm -rf "$work"' EXIT; }
# read_addrs: the sandbox nodes' addresses into the array addrs.
read_addrs() { mapfile -t addrs < <(node -e 'for (const n of JSON.parse(require("fs").readFileSync(process.argv[1])).nodes) console.log(n.addr)' "$dir/state.json"); }
# fanout SCRIPT CMD...: `ssh root@NODE CMD... < SCRIPT > /dev/null`, plain OpenSSH, to every
# node in addrs at once: each in the background, so the caller waits.
fanout() {
  local a
  for a in "${addrs[@]}"; do
    ssh -i "$dir/id_ed25519" -o UserKnownHostsFile="$dir/known_hosts" -o StrictHostKeyChecking=yes -o BatchMode=yes \
      "root@$a" "${@:2}" < "$1" > /dev/null &
  done
}

# Where the time goes: CPU seconds of the script's children (the client side) and of the
# sandbox's cgroup (the nodes). All share this machine's cores, so either side's CPU shows
# in the other's wall time. measure writes "$work/times": the script sets work.
bench_cpuacct=/sys/fs/cgroup/cpuacct/decom-sandbox/cpuacct.usage
# `times` must run in the script's shell, not in a $(…) subshell: children's times do not survive a fork.
client_cpu() { awk 'NR == 2 { split($0, t, /[ms]+/); print t[1] * 60 + t[2] + t[3] * 60 + t[4] }' "$work/times"; }
node_cpu() { if [ -r "$bench_cpuacct" ]; then awk '{ print $1 / 1e9 }' "$bench_cpuacct"; else echo 0; fi; }
# measure ARRAY CMD...: runs CMD, then appends "wall client-cpu node-cpu" (seconds) to ARRAY.
measure() {
  local -n acc=$1; shift
  local t0 c0 n0 t1 c1 n1
  times > "$work/times"; t0=$(now) c0=$(client_cpu) n0=$(node_cpu)
  "$@"
  times > "$work/times"; t1=$(now) c1=$(client_cpu) n1=$(node_cpu)
  acc+=("$(secs "$t0" "$t1") $(secs "$c0" "$c1") $(secs "$n0" "$n1")")
}

# above WALL FLOOR: "SECONDS s (PERCENT% of WALL)": how much of WALL lies above FLOOR.
above() { awk -v w="$1" -v f="$2" 'BEGIN { printf "%.2f s (%.0f%% of %.2f s)", w - f, (w > 0 ? (w - f) / w * 100 : 0), w }'; }
# journal_floor JOURNAL WALL: the physical floor under a `decom run` that took WALL seconds,
# from its journal (runs/RUN.jsonl): per host, the sum of its actions' ms, i.e. its own
# commands' time on the node (a parallel: group's steps side by side: its longest step's). A step whose journal gives an action no time counts whole
# (its step ms: the round trip, its re-probe included), so the floor is then an upper bound.
# Prints "MEDIAN MAX ABOVE SHARE WHOLE": the median and slowest host's sums (s), WALL less the
# slowest's (s) and as a % of WALL, and how many host steps counted whole.
journal_floor() {
  node -e '
const [file, wall] = [process.argv[1], Number(process.argv[2])];
const events = require("fs").readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const hosts = events.find((e) => e.event === "run-start")?.hosts ?? [];
const timed = new Map(), untimed = new Set(), own = Object.fromEntries(hosts.map((h) => [h, 0]));
for (const e of events.filter((x) => x.event === "action")) {
  const k = JSON.stringify([e.host, e.step]);
  if (typeof e.ms === "number") timed.set(k, (timed.get(k) ?? 0) + e.ms); else untimed.add(k);
}
let whole = 0;
// Steps of one parallel: group ran side by side: the group counts as its longest step.
const groups = new Map();
for (const e of events.filter((x) => x.event === "step")) {
  const k = JSON.stringify([e.host, e.step]);
  const ms = untimed.has(k) ? (whole++, e.ms ?? 0) : (timed.get(k) ?? 0);
  if (!e.parallel) { own[e.host] = (own[e.host] ?? 0) + ms; continue; }
  const g = JSON.stringify([e.host, e.parallel]);
  groups.set(g, Math.max(groups.get(g) ?? 0, ms));
}
for (const [g, ms] of groups) { const host = JSON.parse(g)[0]; own[host] = (own[host] ?? 0) + ms; }
const s = Object.values(own).sort((a, b) => a - b).map((ms) => ms / 1000);
const med = s[Math.floor((s.length - 1) / 2)] ?? 0, max = s[s.length - 1] ?? 0;
console.log(med.toFixed(2), max.toFixed(2), (wall - max).toFixed(2), wall > 0 ? ((wall - max) / wall * 100).toFixed(0) : 0, whole);' "$1" "$2"
}

# against_last ROW LABEL RATIOS VERSION...: with more than one VERSION, a blank line, then for
# each VERSION but the last its ratio in the associative array RATIOS over the last one's,
# as printf ROW "$(printf LABEL VERSION LAST)" RATIO (decom's overhead on containerd 2
# against its overhead on 1.6, say).
against_last() {
  local row=$1 label=$2 v last; local -n ratios=$3; shift 3
  [ "$#" -gt 1 ] || return 0
  last=${!#}
  echo
  for v in "$@"; do
    [ "$v" = "$last" ] && continue
    # shellcheck disable=SC2059 # ROW and LABEL are the caller's formats
    printf "$row" "$(printf "$label" "$v" "$last")" "$(awk -v a="${ratios[$v]}" -v b="${ratios[$last]}" 'BEGIN { printf "%.2f", a / b }')"
  done
}

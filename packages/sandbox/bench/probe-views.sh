#!/usr/bin/env bash
# What each view of decom's probe costs the nodes: the node-side CPU (the sandbox's
# cgroup, lib.sh's node_cpu) of a plain OpenSSH fan-out of the probe of that view
# alone, over the same invocation's fan-out of the probe with no view (the floor: the
# prelude and what every probe runs: meta, the /proc stat listing, containerd's
# arguments and config), and the whole probe (every view a reset probes). Each
# figure is less the nodes' idle CPU over its wall time. Measured on dirty nodes
# (kubespray-leftovers), then again on the same nodes after `decom run --playbook
# reset`. Then the reset's re-probes: the views each step of the shipped reset
# playbook probes again (the engine's rule: its views within the full probe, plus
# processes with containers), priced at those figures, per node, with how many hosts
# took each step's round trip in that reset (its journal).
#   bench/probe-views.sh [NODES] [RUNS] [VERSION]   (default 20 nodes, 5 runs, containerd 2; needs root and a build)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
n=${1:-20} runs=${2:-5} rt=${3:-2}
bench_requires

decom sandbox down >/dev/null
echo "bringing up $n nodes with kubespray-leftovers on containerd $rt..." >&2
decom sandbox up --nodes "$n" --scenario kubespray-leftovers --containerd "$rt" >/dev/null
sandbox_work
read_addrs
sleep 2 # let the fresh nodes settle

# The scripts, as decom builds them: $work/views/NAME.sh for the floor (no view), each
# view alone, and the whole (every view of a run without --purge). $work/steps: one line
# per round trip of the reset playbook's steps (a step, or a parallel: group's steps joined
# by +): LABELS, "full" when it always probes again (else "-"), and the views it probes,
# comma-separated (else "-").
mkdir "$work/views"
node -e '
const [dir, steps] = process.argv.slice(1);
const fs = require("fs");
Promise.all([import("../decom/dist/probes/script.js"), import("../decom/dist/steps/index.js"), import("../decom/dist/playbook/load.js")]).then(async ([p, s, pb]) => {
  const write = (name, views) => fs.writeFileSync(`${dir}/${name}.sh`, p.probeScript("bench0000", new Set(views)));
  write("floor", []);
  for (const v of p.VIEWS) write(v, [v]);
  write("whole", p.ALL_VIEWS);
  // A parallel: group (adjacent steps of one name) takes one round trip: one probe of all its views.
  const full = p.ALL_VIEWS, trips = [];
  for (const st of (await pb.loadPlaybook("reset", s.STEPS)).steps) {
    const step = s.STEPS[st.name];
    const within = step.views.filter((x) => full.has(x) || full.has(p.NARROWER[x]));
    const v = p.reprobedViews ? p.reprobedViews(within) : new Set([...within, ...(within.includes("containers") ? ["processes"] : [])]);
    const last = trips[trips.length - 1];
    if (st.parallel && last?.group === st.parallel) { last.labels.push(st.label); for (const x of v) last.views.add(x); last.full ||= !!step.reprobe; }
    else trips.push({ group: st.parallel, labels: [st.label], views: v, full: !!step.reprobe });
  }
  fs.writeFileSync(steps, trips.map((t) => `${t.labels.join("+")} ${t.full ? "full" : "-"} ${[...t.views].join(",") || "-"}\n`).join(""));
})' "$work/views" "$work/steps"
mapfile -t views < <(node -e 'import("../decom/dist/probes/script.js").then((m) => console.log(m.VIEWS.join("\n")))')
names=(floor "${views[@]}" whole)

# idle_rate: the nodes' CPU per second with nothing sent to them (their own daemons).
idle_rate() { local n0 n1; n0=$(node_cpu); sleep 3; n1=$(node_cpu); awk -v a="$n0" -v b="$n1" 'BEGIN { printf "%.4f", (b - a) / 3 }'; }
# probe NAME: $work/views/NAME.sh fanned out to every node; appends its wall time and its
# node CPU less idle × wall to wall[NAME] and cpu[NAME].
declare -A wall cpu
probe() {
  local t0 n0 t1 n1 w
  t0=$(now) n0=$(node_cpu)
  fanout "$work/views/$1.sh" sh -s; wait
  t1=$(now) n1=$(node_cpu)
  w=$(secs "$t0" "$t1" 3)
  wall[$1]+=" $w"
  cpu[$1]+=" $(awk -v a="$n0" -v b="$n1" -v w="$w" -v i="$idle" 'BEGIN { printf "%.4f", b - a - w * i }')"
}
# med LIST: the median of a space-separated list.
med() { tr ' ' '\n' <<< "$1" | grep . | median; }
# over NAME: per round, NAME's CPU less the floor's of the same round; the median.
over() { paste <(tr ' ' '\n' <<< "${cpu[$1]}" | grep .) <(tr ' ' '\n' <<< "${cpu[floor]}" | grep .) | awk '{ print $1 - $2 }' | median; }

# measure_all PHASE: RUNS rounds of every script (one discarded first; the order reversed
# every other round); then PHASE's figures, in CPU-s for all nodes, into cost_PHASE[NAME]
# (the floor and the whole absolute, each view over the floor).
declare -A cost_dirty cost_reset idle_of
# shellcheck disable=SC2034 # cost names the array cost_PHASE, which the report reads
measure_all() {
  local -n cost=cost_$1
  local i j name
  idle=$(idle_rate); idle_of[$1]=$idle
  for name in floor whole; do probe "$name"; done
  wall=() cpu=()
  for i in $(seq 1 "$runs"); do
    if [ $((i % 2)) = 1 ]; then for name in "${names[@]}"; do probe "$name"; done
    else for ((j = ${#names[@]} - 1; j >= 0; j--)); do probe "${names[j]}"; done; fi
  done
  for name in "${names[@]}"; do
    case $name in floor|whole) cost[$name]=$(med "${cpu[$name]}") ;; *) cost[$name]=$(over "$name") ;; esac
    cost[$name.wall]=$(med "${wall[$name]}")
  done
}

measure_all dirty
echo "resetting the $n nodes (decom run --playbook reset)..." >&2
code=0
decom run "$dir/hosts.yaml" all --allow-many --playbook reset --yes --state-dir "$work/state" > "$work/reset.out" 2>&1 || code=$?
[ "$code" = 0 ] || { echo "decom run exited $code:" >&2; tail -5 "$work/reset.out" >&2; }
journal=$(ls -t "$work"/state/runs/*.jsonl 2>/dev/null | head -1 || true)
sleep 2
measure_all reset

ms() { awk -v c="$1" -v n="$n" 'BEGIN { printf "%.1f", c / n * 1000 }'; }
echo
printf 'nodes: %s (kubespray-leftovers, containerd %s), runs: %s (medians); node CPU of each fan-out less the nodes'"'"' idle CPU (%s and %s cores) over its wall time\n' "$n" "$rt" "$runs" "${idle_of[dirty]}" "${idle_of[reset]}"
printf '%-30s %27s   %27s\n' "" "dirty nodes" "after the reset"
printf '%-30s %9s %10s %6s   %9s %10s %6s\n' "probe" "all CPU-s" "per node" "wall" "all CPU-s" "per node" "wall"
for name in "${names[@]}"; do
  case $name in floor) label="floor (no view)" ;; whole) label="whole probe (every view)" ;; *) label="$name (over the floor)" ;; esac
  printf '%-30s %9.3f %7s ms %5ss   %9.3f %7s ms %5ss\n' "$label" "${cost_dirty[$name]}" "$(ms "${cost_dirty[$name]}")" "${cost_dirty[$name.wall]}" \
    "${cost_reset[$name]}" "$(ms "${cost_reset[$name]}")" "${cost_reset[$name.wall]}"
done
sum_views() { local -n c=cost_$1; local s=${c[floor]} v; for v in "${views[@]}"; do case $v in install|pods|facts|cni-firewall) ;; *) s=$(awk -v a="$s" -v b="${c[$v]}" 'BEGIN { print a + b }') ;; esac; done; echo "$s"; }
printf '%-30s %9.3f %7s ms %6s   %9.3f %7s ms\n' "floor + the whole's views" "$(sum_views dirty)" "$(ms "$(sum_views dirty)")" "" "$(sum_views reset)" "$(ms "$(sum_views reset)")"

# The reset's probes, per node: its first (whole) probe on the dirty node, then each
# step's round trip (the floor plus its views; only where the step had work, as the
# journal says, or always for a step that probes everything), priced once at the dirty
# nodes' figures and once at the reset nodes'.
echo
printf "the reset's probes (decom run exit %s), node CPU per node: the floor plus each view a round trip probes (a step's, or a parallel: group's, joined by +); hosts: how many took it\n" "$code"
printf '  %-22s %5s %8s %8s  %s\n' "step" "hosts" "dirty" "reset" "views"
# trips: "LABELS HOSTS": how many hosts took each round trip (one of its steps had actions).
trips=$([ -z "$journal" ] || node -e '
const fs = require("fs"), worked = new Set();
for (const l of fs.readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean)) { const e = JSON.parse(l); if (e.event === "step" && e.status !== "skipped" && (e.actions ?? 0) > 0) worked.add(`${e.step}\t${e.host}`) }
const hosts = new Set([...worked].map((k) => k.split("\t")[1]));
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\n").filter(Boolean)) {
  const labels = line.split(" ")[0];
  console.log(labels, [...hosts].filter((h) => labels.split("+").some((s) => worked.has(`${s}\t${h}`))).length);
}' "$journal" "$work/steps")
price() { local -n c=cost_$1; local s=${c[floor]} v; for v in ${2//,/ }; do s=$(awk -v a="$s" -v b="${c[$v]}" 'BEGIN { print a + b }'); done; ms "$s"; }
total_d=$(ms "${cost_dirty[whole]}") total_r=$(ms "${cost_dirty[whole]}")
printf '  %-22s %5s %8s %8s  %s\n' "(first probe)" "$n" "$total_d" "$total_r" "the whole probe, on the dirty node"
while read -r label always vs; do
  hosts=$(awk -v s="$label" '$1 == s { print $2 }' <<< "$trips"); hosts=${hosts:-0}
  [ "$always" = full ] && hosts=$n
  # A round trip with no view (the backup's, say) still runs the floor.
  pd=$(price dirty "${vs#-}") pr=$(price reset "${vs#-}")
  [ "$always" = full ] && vs="every view, re-probed: $vs"
  printf '  %-22s %5s %8s %8s  %s\n' "$label" "$hosts" "$pd" "$pr" "${vs//,/ }"
  total_d=$(awk -v t="$total_d" -v p="$pd" -v h="$hosts" -v n="$n" 'BEGIN { printf "%.1f", t + p * h / n }')
  total_r=$(awk -v t="$total_r" -v p="$pr" -v h="$hosts" -v n="$n" 'BEGIN { printf "%.1f", t + p * h / n }')
done < "$work/steps"
printf '  %-22s %5s %8s %8s  %s\n' "total" "" "$total_d" "$total_r" "per node, each step weighted by its hosts (ms of node CPU)"

#!/usr/bin/env bash
# decom's whole decommission on the sandbox cluster (the `cluster` scenario: the
# sandbox API, real etcd, kubelets running the pods), timed from its journal:
#   1. one node (a worker, then a control plane and etcd member): wall time split into its phases: drain (cordon,
#      evictions, pods gone, volumes detached), etcd, reset (backup to images),
#      verify, delete (the Node and what the API keeps for it), plus the run's start
#      (connect, probe, interlocks) and end (the last full probe);
#   2. ten workers (of 12 nodes): one `decom run … --serial 2` against the baseline
#      run in the same invocation, the single-node command ten times in sequence,
#      each on a freshly planted cluster.
#   bench/decommission.sh            (needs root and a build; about 3 minutes)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
bench_requires

sandbox_work

# fresh NODES [up flags…]
fresh() {
  decom sandbox down >/dev/null
  echo "bringing up $1 nodes with the cluster scenario..." >&2
  decom sandbox up --nodes "$@" --etcd --scenario cluster >/dev/null 2> "$work/up.err" || { cat "$work/up.err" >&2; exit 1; }
}
# run ARGS…: `decom run` that must end clean (exit 0).
run() {
  local code=0
  decom run "$dir/hosts.yaml" "$@" --yes --state-dir "$work/state" --output json > "$work/run.json" 2> "$work/run.err" || code=$?
  [ "$code" = 0 ] || { echo "decom run $* exited $code:" >&2; tail -5 "$work/run.err" >&2; exit 1; }
}

# 1. One node, by phase: each step's time from the journal's step-start and step events.
# phases WHAT NODES CONTROL_PLANES
phases() {
  fresh "$2" --control-planes "$3"
  local t0 t1 journal
  t0=$(now); run node3; t1=$(now)
  journal=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).journal)' "$work/run.json")
  echo "one node's decommission ($1): $(secs "$t0" "$t1" 1) s wall"
  # The physical floor (lib.sh's journal_floor): the node's own commands; a cluster step (the API's work) counts whole.
  local own whole
  read -r _ own _ _ whole <<< "$(journal_floor "$journal" "$(secs "$t0" "$t1")")"
  echo "  floor: the node's own commands $own s ($whole steps counted whole: the cluster's and any the journal gives no action times); decom above it: $(above "$(secs "$t0" "$t1")" "$own")"
  node - "$journal" "$t0" "$t1" <<'EOF'
const [file, t0, t1] = process.argv.slice(2);
const events = require('fs').readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const phase = { drain: 'drain', volumes: 'drain', 'etcd-member': 'etcd', verify: 'verify', 'delete-node': 'delete' };
const sums = {};
let first = Infinity, last = 0;
for (const e of events) {
  if (e.event !== 'step' || e.status === 'skipped') continue;
  const start = events.find((s) => s.event === 'step-start' && s.step === e.step && s.host === e.host);
  const from = Date.parse((start ?? e).ts), to = Date.parse(e.ts);
  first = Math.min(first, from); last = Math.max(last, to);
  const p = phase[e.step] ?? 'reset';
  sums[p] = (sums[p] ?? 0) + (to - from);
}
const row = (name, ms) => console.log(`  ${name.padEnd(8)} ${(ms / 1000).toFixed(1).padStart(6)} s`);
row('start', first - Number(t0) * 1000);
for (const p of ['drain', 'etcd', 'reset', 'verify', 'delete']) row(p, sums[p] ?? 0);
row('end', Number(t1) * 1000 - last);
EOF
}
phases 'a worker: node3 of 3, two web pods under a budget that lets one go at a time, a CSI volume' 3 1
phases 'a control plane and etcd member: node3 of 5, 3 etcd members' 5 3

# 2. Ten workers: one rolling run against ten single-node runs.
workers=(node3 node4 node5 node6 node7 node8 node9 node10 node11 node12)
fresh 12
t0=$(now); run "${workers[@]}" --serial 2; t1=$(now)
fleet=$(secs "$t0" "$t1" 1)
fresh 12
t0=$(now); for w in "${workers[@]}"; do run "$w"; done; t1=$(now)
seq=$(secs "$t0" "$t1" 1)
echo "ten workers (of 12 nodes):"
echo "  decom run node3 … node12 --serial 2   ${fleet} s"
echo "  decom run NODE, ten times in sequence  ${seq} s"
awk -v f="$fleet" -v s="$seq" 'BEGIN { printf "  sequence / rolling: %.2fx\n", s / f }'

#!/usr/bin/env bash
# Sandbox bring-up and teardown, 10 and 50 nodes, systemd and init-less, and the
# memory each node costs. Baseline, run in the same invocation on the same cores:
# the floor of a node, i.e. a bare `unshare` of the same namespaces running only
# sshd, with none of decom's set-up (overlay root, /dev, cgroups, systemd, macvlan).
#   bench/sandbox.sh [COUNTS...]      (default: 10 50; needs root and a build)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
counts=("${@:-10 50}"); read -r -a counts <<<"${counts[*]}"
mem_avail_kib() { awk '/^MemAvailable:/ { print $2 }' /proc/meminfo; }
bench_requires
decom sandbox down >/dev/null

baseline_up() { # n: bare namespaces + sshd, all started in parallel, until every sshd listens
  local n=$1 i u c deadline
  BASE_DIR=$(mktemp -d); BASE_PIDS=()
  ssh-keygen -q -t ed25519 -N '' -f "$BASE_DIR/key"
  for i in $(seq 1 "$n"); do
    unshare --net --mount --pid --fork --propagation private sh -c \
      "mount -t tmpfs none /run && mkdir /run/sshd && ip link set lo up && exec /usr/sbin/sshd -D -f /dev/null -h $BASE_DIR/key" 2>/dev/null &
    BASE_PIDS+=($!)
  done
  deadline=$(( $(date +%s) + 30 ))
  for u in "${BASE_PIDS[@]}"; do
    until c=$(cat "/proc/$u/task/$u/children" 2>/dev/null) && c=${c%% *} && [ -n "$c" ] && nsenter -t "$c" -n ss -Hltn 'sport = :22' | grep -q .; do
      [ "$(date +%s)" -lt "$deadline" ] || { echo "baseline: sshd did not come up" >&2; baseline_down; exit 1; }
      sleep 0.01
    done
  done
}
baseline_down() { # by PID: the node PID 1s this script started
  local u c
  for u in "${BASE_PIDS[@]}"; do for c in $(cat "/proc/$u/task/$u/children" 2>/dev/null); do kill -9 "$c"; done; done
  wait 2>/dev/null || true
  rm -rf "$BASE_DIR"
}

printf '%-6s %-8s %10s %10s %12s %14s %12s\n' nodes init up_s down_s baseline_s up/baseline MiB/node
for n in "${counts[@]}"; do
  t0=$(now); baseline_up "$n"; t1=$(now); baseline_down
  base=$(secs "$t0" "$t1")
  for init in systemd none; do
    sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
    m0=$(mem_avail_kib)
    t0=$(now); decom sandbox up --nodes "$n" --init "$init" >/dev/null || exit 1; t1=$(now)
    sleep 1 # let boot-time work settle before reading memory
    m1=$(mem_avail_kib)
    # Cross-checked: MemAvailable drop (all costs, kernel included) vs the nodes' memory cgroup.
    cg=$(cat /sys/fs/cgroup/memory/decom-sandbox/memory.usage_in_bytes 2>/dev/null || echo 0)
    running=$(decom sandbox status --output json | grep -c '"state": "running"' || true)
    [ "$running" = "$n" ] || { echo "only $running of $n nodes running" >&2; decom sandbox down; exit 1; }
    t2=$(now); decom sandbox down >/dev/null; t3=$(now)
    up=$(secs "$t0" "$t1")
    printf '%-6s %-8s %10s %10s %12s %13sx %12s\n' "$n" "$init" "$up" "$(secs "$t2" "$t3")" "$base" \
      "$(awk -v a="$up" -v b="$base" 'BEGIN { printf "%.1f", a / b }')" \
      "$(awk -v a="$m0" -v b="$m1" -v c="$cg" -v n="$n" 'BEGIN { printf "%.1f (cgroup %.1f)", (a - b) / 1024 / n, c / 1048576 / n }')"
  done
done
echo "target: 10 systemd nodes up and running in <= 5 s on 2 cores"

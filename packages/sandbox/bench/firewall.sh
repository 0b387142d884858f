#!/usr/bin/env bash
# A kube-proxy-sized firewall (N Services in iptables mode: ~5N rules in ~2N chains,
# plus another application's chains) in BOTH iptables backends of a network
# namespace of this script's own, and what decom does with it:
#   - iptables-save of both backends (what the probe runs on the node): the baseline;
#   - parse + residue rules on that output, in-process (the verify path);
#   - the selective prune: one iptables-restore --noflush per backend.
# The host's own firewall is never touched.
#   bench/firewall.sh [SERVICES] [RUNS]    (default 20000 Services, 3 runs; needs root and a build;
#                                           DECOM_DIST=DIR to use another build than decom's dist/)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
n=${1:-20000} runs=${2:-3}
dist=$(realpath "${DECOM_DIST:-../decom/dist}")
bench_requires "$dist/firewall/iptables.js"
for p in ip iptables-nft-restore iptables-legacy-restore iptables-nft-save iptables-legacy-save; do
  command -v "$p" >/dev/null || bench_fail "$p is missing (apt-get install -y iptables iproute2)"
done

ns=decomfw-bench-$$
trap 'ip netns del "$ns" 2>/dev/null || true' EXIT
echo "$n Services, $runs runs, netns $ns" >&2

NS=$ns N=$n RUNS=$runs DIST=$dist SANDBOX_DIST=$(realpath dist) node --input-type=module -e '
import { spawnSync } from "node:child_process";
const { NS, N, RUNS, DIST, SANDBOX_DIST } = process.env;
const { kubeProxyRuleset, APP_RULESET } = await import(`${SANDBOX_DIST}/services.js`);
const { parseIptablesSave } = await import(`${DIST}/probes/parse.js`);
const { findings } = await import(`${DIST}/rules/residue.js`);
const { emptyState } = await import(`${DIST}/probes/index.js`);
const { pruneCommands } = await import(`${DIST}/firewall/iptables.js`);

const run = (file, args, input) => {
  const r = spawnSync(file, args, { input, encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`${file} ${args.join(" ")}: exit ${r.status}: ${r.stderr}`);
  return r.stdout;
};
const inNs = (cmd, input) => run("ip", ["netns", "exec", NS, "sh", "-c", cmd], input);
const timed = (fn) => { const t0 = performance.now(); const v = fn(); return [v, (performance.now() - t0) / 1000]; };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
// A node with nothing else: the probe sees only this firewall.
const bare = emptyState();

const ruleset = kubeProxyRuleset(Number(N)) + APP_RULESET;
const m = { load: [], save: [], verify: [], prune: [] };
let rules = 0, chains = 0, found = 0;
for (let i = 0; i < Number(RUNS); i++) {
  spawnSync("ip", ["netns", "del", NS]);
  run("ip", ["netns", "add", NS]);
  m.load.push(timed(() => { for (const b of ["nft", "legacy"]) inNs(`iptables-${b}-restore --noflush >/dev/null`, ruleset); })[1]);
  const [saved, save] = timed(() => ["nft", "legacy"].map((b) => [b, inNs(`iptables-${b}-save`)]));
  m.save.push(save);
  const [state, verify] = timed(() => {
    const iptables = saved.flatMap(([b, text]) => parseIptablesSave(text, b, 4));
    return { iptables, found: findings({ ...bare, iptables }).length };
  });
  m.verify.push(verify);
  rules = state.iptables.reduce((s, t) => s + t.rules.length, 0);
  chains = state.iptables.reduce((s, t) => s + t.chains.length, 0);
  found = state.found;
  m.prune.push(timed(() => { for (const c of pruneCommands(state.iptables)) inNs(c.command, c.input); })[1]);
  const left = ["nft", "legacy"].flatMap((b) => parseIptablesSave(inNs(`iptables-${b}-save`), b, 4));
  if (findings({ ...bare, iptables: left }).length) throw new Error("Kubernetes rules left after the prune");
  if (!left.some((t) => t.backend === "nft" && t.chains.includes("APP-FIREWALL"))) throw new Error("the other app lost its chain");
}
spawnSync("ip", ["netns", "del", NS]);

const save = median(m.save);
const line = (what, xs, note = "") => {
  const v = median(xs);
  console.log(`${what.padEnd(44)} ${v.toFixed(2).padStart(6)} s  ${(v / save).toFixed(2).padStart(5)} x save   (runs: ${xs.map((x) => x.toFixed(2)).join(" ")})${note}`);
};
console.log(`Services: ${N}; both backends: ${rules} rules in ${chains} chains; findings: ${found}; runs: ${RUNS} (medians)`);
line("iptables-save, nft + legacy (baseline)", m.save);
line("parse + residue rules (verify path)", m.verify);
line("prune: iptables-restore --noflush, both", m.prune, "   (target <= 10 s)");
line("load (not decom: the set-up)", m.load);
'

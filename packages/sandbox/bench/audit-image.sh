#!/usr/bin/env bash
# deploy/Dockerfile's image as `decom sandbox image` builds it: cold (no cache: the base
# made from Debian's packages, every layer built, as on a fresh machine), then cached
# (base and layers reused, nothing changed), and the image's size, unpacked and as the
# OCI archive. Baseline, run in the same invocation: the work no builder can skip, with
# no tool around it — Debian bookworm minbase installed by mmdebstrap from the same
# mirror (and thrown away), and `npm ci --omit=dev` of the same lockfile into an empty
# folder with an empty npm cache. Leaves the image and its archive in /var/cache/decom/image.
#   bench/audit-image.sh      (needs root, Node.js 20 and a build; downloads Debian and npm packages)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
field() { node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(r[process.argv[1]])' "$1"; }
bench_requires
command -v mmdebstrap >/dev/null || bench_fail "needs mmdebstrap (./scripts/setup --test)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t sources < <(node -e 'import("./dist/audit-image.js").then((m) => console.log(m.debianSources().join("\n")))')

# The baseline: Debian's packages and npm's, downloaded and installed, nothing else.
t0=$(now)
TMPDIR=$work mmdebstrap --quiet --mode=root --variant=minbase bookworm /dev/null "${sources[@]}"
mkdir -p "$work/packages/decom" "$work/packages/sandbox"
cp ../../package.json ../../package-lock.json "$work/"
cp ../decom/package.json "$work/packages/decom/" && cp package.json "$work/packages/sandbox/"
(cd "$work" && npm ci --omit=dev --workspace decom --ignore-scripts --no-audit --no-fund --loglevel=error --cache "$work/npm-cache" >/dev/null)
t1=$(now)
base=$(secs "$t0" "$t1" 1)

echo "building cold (no cache), then cached..." >&2
cold=$(decom sandbox image --no-cache --output json)
cached=$(decom sandbox image --output json)
cold_s=$(field seconds <<<"$cold" | awk '{ printf "%.1f", $1 }')
cached_s=$(field seconds <<<"$cached" | awk '{ printf "%.1f", $1 }')

printf '%-8s %10s %12s %14s\n' build seconds baseline_s build/baseline
printf '%-8s %10s %12s %14s\n' cold "$cold_s" "$base" "$(ratio "$cold_s" "$base")"
printf '%-8s %10s %12s %14s\n' cached "$cached_s" "$base" "$(ratio "$cached_s" "$base")"
image=$(field imageBytes <<<"$cached") archive=$(field bytes <<<"$cached")
awk -v i="$image" -v a="$archive" 'BEGIN { printf "image: %.1f MB unpacked, OCI archive %.1f MB (%.2f of unpacked)\n", i / 1e6, a / 1e6, a / i }'
echo "archive: $(field archive <<<"$cached"), containerd names it $(field ref <<<"$cached")"

#!/usr/bin/env bash
# Fetches the container runtimes the sandbox's nodes run, newer than Debian 12's, from
# Debian's own archive (testing, sid, trixie) into a cache, without installing them:
# `apt-get download` with a sources list and lists dir of the cache's own, then
# `dpkg -x`. Each node then sees its version's binaries bound over the host's
# (src/runtimes.ts). Writes versions.json: the exact version each slot got, and every
# newer one that was skipped because it cannot run on this machine, and why.
#
#   containerd-2    containerd 2.x: testing's, sid's if none of testing's runs here (the default runtime)
#   containerd-1.7  containerd 1.7.x: trixie
#   cni             containernetworking-plugins: testing, then sid (containerd 2 and 1.7 nodes)
#   kubectl         the tests' kubectl: testing, then sid
#
# containerd 1.6 is Debian 12's own package (scripts/setup installs it), with its CNI
# plugins 1.1.1: nothing to fetch. Run as root; safe to run again.
set -euo pipefail

CACHE=${DECOM_RUNTIME_CACHE:-/var/cache/decom/runtimes}
ARCH=$(dpkg --print-architecture)
say() { echo "setup: $*" >&2; }

mkdir -p "$CACHE/apt"
# One apt state per suite, all of it inside the cache: the host's sources, lists and
# package database are never read or written.
apt_for() { # suite args...
  local suite=$1; shift
  local d=$CACHE/apt/$suite
  apt-get -q -o Dir::Etc::sourcelist="$d/sources.list" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$d/lists" -o Dir::State::status=/dev/null -o Dir::Cache="$d/cache" \
    -o APT::Architecture="$ARCH" -o APT::Sandbox::User=root -o Debug::NoLocking=1 "$@"
}
cache_for() { # suite args...
  local suite=$1; shift
  local d=$CACHE/apt/$suite
  apt-cache -o Dir::Etc::sourcelist="$d/sources.list" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$d/lists" -o Dir::State::status=/dev/null -o Dir::Cache="$d/cache" \
    -o APT::Architecture="$ARCH" "$@"
}

UPDATED=()
update_suite() { # suite: fetch its package lists once per run
  local suite=$1 s
  for s in "${UPDATED[@]:-}"; do [ "$s" = "$suite" ] && return 0; done
  local d=$CACHE/apt/$suite
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s main\n' "$suite" > "$d/sources.list"
  if ! apt_for "$suite" update -qq >/dev/null 2>"$d/update.err"; then
    # Offline: the lists of an earlier run still name what the cache holds.
    if compgen -G "$d/lists/*_Packages*" >/dev/null; then
      say "could not refresh Debian $suite's package lists ($(tail -1 "$d/update.err")): using the ones from an earlier run"
    else
      say "could not read Debian $suite's package lists: $(tail -1 "$d/update.err")"
      return 1
    fi
  fi
  UPDATED+=("$suite")
}

# Whether the unpacked tree's programs run on this machine (a newer glibc than
# Debian 12's, say, fails here): prints the first error line and fails if not.
runs() { # root component
  local root=$1 out rc=0
  case $2 in
    containerd-*) out=$( { "$root/usr/bin/containerd" --version && "$root/usr/bin/containerd-shim-runc-v2" -v && "$root/usr/bin/ctr" --version; } 2>&1) || rc=$? ;;
    cni) out=$( { for p in bridge host-local portmap loopback; do "$root/usr/lib/cni/$p" --version || exit 1; done; } 2>&1) || rc=$? ;;
    kubectl) out=$("$root/usr/bin/kubectl" version --client 2>&1) || rc=$? ;;
  esac
  [ "$rc" = 0 ] && return 0
  # One line, printable characters only: it goes into versions.json.
  out=$(printf '%s\n' "$out" | grep -m1 -v '^$' | tr -d '\000-\037' || true)
  echo "${out:-exit status $rc}"
  return 1
}

# versions.json's entries: "component package version suite root" per fetched slot,
# "component|package|version|suite|why" per version that cannot run here.
RESULTS=()
SKIPPED=()
OLD_MANIFEST=$(cat "$CACHE/versions.json" 2>/dev/null || true)

# A slot's entry in the versions.json of an earlier run, as "package version suite root".
previous() { # component
  printf '%s\n' "$OLD_MANIFEST" | sed -n "s/^ *\"$1\": { \"package\": \"\([^\"]*\)\", \"version\": \"\([^\"]*\)\", \"suite\": \"\([^\"]*\)\", \"root\": \"\([^\"]*\)\" },\{0,1\}$/\1 \2 \3 \4/p"
}

# Downloads and unpacks one version (once: an unpacked tree is kept); fails saying why.
unpack() { # package version suite root
  local pkg=$1 version=$2 suite=$3 root=$4 tmp
  [ -e "$root/.unpacked" ] && return 0
  rm -rf "$root" "$root.tmp"
  # An empty folder of its own: whatever apt names the file (an epoch's colon, say), it is the only one there.
  tmp=$(mktemp -d "$CACHE/apt/$suite/download.XXXXXX")
  if ! (cd "$tmp" && apt_for "$suite" download -qq "$pkg=$version" >/dev/null 2>"$tmp/err"); then
    say "could not download $pkg $version from Debian $suite: $(tail -1 "$tmp/err")"
    rm -rf "$tmp"
    return 1
  fi
  dpkg-deb -x "$tmp"/*.deb "$root.tmp"
  rm -rf "$tmp"
  printf '%s %s from Debian %s, unpacked by fetch-runtimes.sh\n' "$pkg" "$version" "$suite" > "$root.tmp/.unpacked"
  mv "$root.tmp" "$root"
}

fetch() { # component package family-regex suites...
  local component=$1 pkg=$2 family=$3; shift 3
  local suite version root why candidates=() seen=' ' 
  # In the suites' order (testing, then sid), each suite's versions newest
  # first; a version once, from the first suite that has it.
  for suite in "$@"; do
    update_suite "$suite" || continue
    while read -r version; do
      [[ $version =~ $family ]] || continue
      [[ $seen == *" $version "* ]] && continue
      seen+="$version "
      candidates+=("$version $suite")
    done < <(cache_for "$suite" madison "$pkg" | awk -F'|' '{gsub(/ /, "", $2); print $2}' | sort_newest_first)
  done
  for c in "${candidates[@]:-}"; do
    [ -n "$c" ] || continue
    version=${c% *} suite=${c##* }
    root=$CACHE/${pkg}_${version//:/%3a}
    unpack "$pkg" "$version" "$suite" "$root" || continue
    if why=$(runs "$root" "$component"); then
      RESULTS+=("$component $pkg $version $suite $root")
      say "$component: $pkg $version from Debian $suite"
      return 0
    fi
    say "$pkg $version from Debian $suite cannot run on this machine ($why): trying the next one"
    SKIPPED+=("$component|$pkg|$version|$suite|$why")
  done
  # None listed now runs or downloads (a mirror mid-sync, no network): an earlier run's, if it still runs.
  local prev
  prev=$(previous "$component")
  if [ -n "$prev" ]; then
    read -r _ version suite root <<< "$prev"
    if [ -e "$root/.unpacked" ] && runs "$root" "$component" >/dev/null; then
      RESULTS+=("$component $pkg $version $suite $root")
      say "$component: keeping $pkg $version from Debian $suite, fetched earlier"
      return 0
    fi
  fi
  say "no $pkg matching $family in Debian ${*} runs on this machine: the sandbox cannot offer $component"
}

# Debian version strings, newest first, by dpkg's own ordering.
sort_newest_first() {
  local sorted=() v i placed
  while read -r v; do
    [ -n "$v" ] || continue
    placed=()
    local done=''
    for i in "${sorted[@]:-}"; do
      [ -n "$i" ] || continue
      if [ -z "$done" ] && dpkg --compare-versions "$v" gt "$i"; then placed+=("$v"); done=1; fi
      placed+=("$i")
    done
    [ -z "$done" ] && placed+=("$v")
    sorted=("${placed[@]}")
  done
  printf '%s\n' "${sorted[@]:-}"
}

fetch containerd-2 containerd '^2\.' testing sid
fetch containerd-1.7 containerd '^1\.7\.' trixie
fetch cni containernetworking-plugins '^[0-9]' testing sid
fetch kubectl kubectl '^[0-9]' testing sid

json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
{
  printf '{\n  "fetchedAt": "%s",\n  "components": {' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  sep=''
  for r in "${RESULTS[@]:-}"; do
    [ -n "$r" ] || continue
    read -r component pkg version suite root <<< "$r"
    printf '%s\n    "%s": { "package": "%s", "version": "%s", "suite": "%s", "root": %s }' "$sep" "$component" "$pkg" "$version" "$suite" "$(json_str "$root")"
    sep=','
  done
  printf '\n  },\n  "skipped": ['
  sep=''
  for s in "${SKIPPED[@]:-}"; do
    [ -n "$s" ] || continue
    IFS='|' read -r component pkg version suite why <<< "$s"
    printf '%s\n    { "component": "%s", "package": "%s", "version": "%s", "suite": "%s", "why": %s }' "$sep" "$component" "$pkg" "$version" "$suite" "$(json_str "$why")"
    sep=','
  done
  printf '\n  ]\n}\n'
} > "$CACHE/versions.json.tmp"
mv "$CACHE/versions.json.tmp" "$CACHE/versions.json"

# Unpacked versions versions.json no longer names (superseded, or that cannot run here): removed.
for d in "$CACHE"/containerd_* "$CACHE"/containernetworking-plugins_* "$CACHE"/kubectl_*; do
  [ -d "$d" ] || continue
  grep -q -F "\"root\": \"$d\"" "$CACHE/versions.json" || rm -rf "$d"
done

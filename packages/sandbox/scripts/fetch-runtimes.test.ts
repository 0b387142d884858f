/**
 * scripts/fetch-runtimes.sh's choice of versions, against a stand-in Debian archive: apt-get,
 * apt-cache and dpkg-deb on PATH answer for three suites, and the programs they unpack
 * run or fail as a binary built for a newer glibc fails. What it must do: take the
 * suites in order (testing, then sid), each one's newest of the family first, name every
 * version that cannot run here and why, take the first that runs, keep what it has when
 * the archive cannot be reached, and write what it got to versions.json.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../decom/test/helpers/temp.js';

const SCRIPT = join(import.meta.dirname, 'fetch-runtimes.sh');
const work = tempDir('decom-fetch-runtimes-');
afterAll(() => rmSync(work, { recursive: true, force: true }));

type Archive = Record<string, Record<string, string[]>>;

/** Stand-ins for apt-get, apt-cache and dpkg-deb, answering from $ARCHIVE ("suite package version" lines). */
function stubs(): string {
  const bin = join(work, 'bin');
  mkdirSync(bin, { recursive: true });
  const put = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/bash\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  // The suite is in the sources list the script passes with -o Dir::Etc::sourcelist=FILE.
  const suiteOf = 'for a in "$@"; do case $a in Dir::Etc::sourcelist=*) suite=$(awk \'{print $(NF-1)}\' "${a#*=}");; Dir::State::Lists=*) lists=${a#*=};; esac; done';
  put('apt-cache', `${suiteOf}
[ "\${@: -2:1}" = madison ] || exit 1
awk -v s="$suite" -v p="\${@: -1}" '$1 == s && $2 == p { printf " %s | %s | http://deb.debian.org/debian %s/main amd64 Packages\\n", p, $3, s }' "$ARCHIVE"`);
  put('apt-get', `${suiteOf}
case " $* " in
  *" update "*) [ -n "$OFFLINE" ] && { echo "E: could not resolve deb.debian.org" >&2; exit 100; }; mkdir -p "$lists"; : > "$lists/deb.debian.org_debian_dists_\${suite}_main_binary-amd64_Packages"; exit 0 ;;
  *" download "*) [ -n "$OFFLINE" ] && exit 100; spec=\${@: -1}; pkg=\${spec%%=*} v=\${spec#*=}; : > "\${pkg}_\${v/:/%3a}_$(dpkg --print-architecture).deb"; echo "$suite $pkg $v" >> "$DOWNLOADS" ;;
esac`);
  // dpkg-deb -x DEB DIR: programs that print their version, or fail as a binary built for a newer glibc does.
  put('dpkg-deb', `deb=\${2##*/} dir=$3; pkg=\${deb%%_*} v=\${deb#*_}; v=\${v%_*}; v=\${v/\\%3a/:}
fails=; grep -q -F -x -e "$v" "$NEEDS_NEWER_GLIBC" && fails=1
prog() { mkdir -p "$(dirname "$1")"; if [ -n "$fails" ]; then printf '#!/bin/sh\\necho "%s: /lib/x86_64-linux-gnu/libc.so.6: version \\x27GLIBC_2.38\\x27 not found (required by %s)" >&2\\nexit 1\\n' "$1" "$1"; else printf '#!/bin/sh\\necho "%s %s"\\n' "$pkg" "$v"; fi > "$1"; chmod +x "$1"; }
case $pkg in
  containerd) for p in containerd containerd-shim-runc-v2 ctr; do prog "$dir/usr/bin/$p"; done ;;
  containernetworking-plugins) for p in bridge host-local portmap loopback; do prog "$dir/usr/lib/cni/$p"; done ;;
  kubectl) prog "$dir/usr/bin/kubectl" ;;
esac`);
  return bin;
}
const BIN = stubs();

/** One run of the script against `archive`, in a cache of the case's own. */
function fetchRuns(name: string, archive: Archive, needsNewerGlibc: string[]) {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'archive'), Object.entries(archive).flatMap(([suite, pkgs]) => Object.entries(pkgs).flatMap(([pkg, vs]) => vs.map((v) => `${suite} ${pkg} ${v}\n`))).join(''));
  writeFileSync(join(dir, 'needs-newer-glibc'), needsNewerGlibc.map((v) => `${v}\n`).join(''));
  const cache = join(dir, 'cache');
  const run = (env: Record<string, string> = {}) =>
    spawnSync('bash', [SCRIPT], {
      encoding: 'utf8',
      env: { ...process.env, PATH: `${BIN}:${process.env.PATH}`, DECOM_RUNTIME_CACHE: cache, ARCHIVE: join(dir, 'archive'), NEEDS_NEWER_GLIBC: join(dir, 'needs-newer-glibc'), DOWNLOADS: join(dir, 'downloads'), OFFLINE: '', ...env },
    });
  const manifest = () => JSON.parse(readFileSync(join(cache, 'versions.json'), 'utf8'));
  const downloads = () => (existsSync(join(dir, 'downloads')) ? readFileSync(join(dir, 'downloads'), 'utf8').trim().split('\n').sort() : []);
  return { run, manifest, downloads, cache };
}

describe('fetch-runtimes.sh, against a stand-in archive', () => {
  it("takes testing's version of each slot that runs here, even with a newer one in sid, each unpacked where versions.json says", () => {
    const f = fetchRuns('testing-first', {
      testing: { containerd: ['2.1.9+ds1-5'], 'containernetworking-plugins': ['1.9.1+ds1-1'], kubectl: ['1.36.4+ds-1'] },
      sid: { containerd: ['2.2.0+ds1-1'], 'containernetworking-plugins': ['1.9.1+ds1-1'], kubectl: ['1.37.0+ds-1'] },
      trixie: { containerd: ['1.7.24~ds1-6+deb13u1'] },
    }, ['2.2.0+ds1-1']);
    const r = f.run();
    expect(r.status, r.stderr).toBe(0);
    const m = f.manifest();
    expect(m.components['containerd-2']).toMatchObject({ package: 'containerd', version: '2.1.9+ds1-5', suite: 'testing' });
    expect(m.components['containerd-1.7']).toMatchObject({ version: '1.7.24~ds1-6+deb13u1', suite: 'trixie' });
    expect(m.components.cni).toMatchObject({ version: '1.9.1+ds1-1', suite: 'testing' });
    expect(m.components.kubectl).toMatchObject({ version: '1.36.4+ds-1', suite: 'testing' });
    expect(m.skipped).toEqual([]);
    for (const c of Object.values(m.components) as { root: string }[]) expect(existsSync(join(c.root, '.unpacked')), c.root).toBe(true);
    // sid was never needed.
    expect(f.downloads()).toEqual(['testing containerd 2.1.9+ds1-5', 'testing containernetworking-plugins 1.9.1+ds1-1', 'testing kubectl 1.36.4+ds-1', 'trixie containerd 1.7.24~ds1-6+deb13u1']);
    // Run again: nothing downloaded twice.
    expect(f.run().status).toBe(0);
    expect(f.downloads()).toHaveLength(4);
  });

  it("names testing's containerd that cannot run here and why, then takes the newest of sid's that runs; offline later, keeps what it has", () => {
    const f = fetchRuns('fallback', {
      testing: { containerd: ['2.2.0+ds1-1'], 'containernetworking-plugins': ['1.9.1+ds1-1'], kubectl: ['1:1.36.4+ds-1'] },
      sid: { containerd: ['2.2.0+ds1-1', '2.1.9+ds1-5', '2.1.8+ds1-1'] },
      trixie: { containerd: ['1.7.24~ds1-6+deb13u1'] },
    }, ['2.2.0+ds1-1']);
    const r = f.run();
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^setup: containerd 2\.2\.0\+ds1-1 from Debian testing cannot run on this machine \(.*GLIBC_2\.38' not found .*\): trying the next one$/m);
    expect(r.stderr).toContain('setup: containerd-2: containerd 2.1.9+ds1-5 from Debian sid');
    const m = f.manifest();
    expect(m.components['containerd-2']).toMatchObject({ version: '2.1.9+ds1-5', suite: 'sid' });
    expect(m.skipped).toEqual([{ component: 'containerd-2', package: 'containerd', version: '2.2.0+ds1-1', suite: 'testing', why: expect.stringContaining("GLIBC_2.38' not found") }]);
    // The same version in sid is not tried twice; an epoch's colon is no trouble.
    expect(f.downloads().filter((d) => d.includes('2.2.0'))).toEqual(['testing containerd 2.2.0+ds1-1']);
    expect(m.components.kubectl).toMatchObject({ version: '1:1.36.4+ds-1' });
    // What cannot run is not kept in the cache.
    expect(readdirSync(f.cache).filter((d) => d.startsWith('containerd_')).sort()).toEqual(['containerd_1.7.24~ds1-6+deb13u1', 'containerd_2.1.9+ds1-5']);

    const offline = f.run({ OFFLINE: '1' });
    expect(offline.status, offline.stderr).toBe(0);
    expect(offline.stderr).toContain("could not refresh Debian testing's package lists");
    expect(f.manifest().components['containerd-2']).toMatchObject({ version: '2.1.9+ds1-5', suite: 'sid' });
    expect(f.manifest().components.kubectl).toMatchObject({ version: '1:1.36.4+ds-1' });
  });
});

// containerd's own configuration (src/cri/containerd-config.ts): the paths it really uses, read
// from its config files as containerd reads them. Fixtures in test/fixtures/containerd: hand-made
// configs of versions 2, 3 and 4 that set the same paths, and real `containerd config default`
// prints of 1.6.20, 1.7.24 and 2.1.9.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CONTAINERD_CONFIG,
  CONTAINERD_DEFAULTS,
  containerdPaths,
  importsOf,
  type ContainerdFile,
  type ContainerdPaths,
} from './containerd-config.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'containerd');
const fixture = (name: string): string => readFileSync(join(FIXTURES, name), 'utf8');
/** A fixture as the node's file at `path`. */
const at = (path: string, name: string): ContainerdFile => ({ path, text: fixture(name) });
const file = (path: string, text: string): ContainerdFile => ({ path, text });

const MAIN = CONTAINERD_CONFIG;

/** The paths only: what decom probes and cleans. */
const paths = (p: ContainerdPaths) => ({
  root: p.root,
  state: p.state,
  address: p.address,
  cniConfDirs: p.cniConfDirs,
  cniBinDirs: p.cniBinDirs,
  cdiSpecDirs: p.cdiSpecDirs,
  nriSocket: p.nriSocket,
  nriPluginDirs: p.nriPluginDirs,
  nriConfDirs: p.nriConfDirs,
});

/** What config-v2.toml, config-v3.toml and config-v4.toml each set. */
const FIXTURE_PATHS = {
  root: '/data/containerd/root',
  state: '/data/containerd/state',
  address: '/data/containerd/containerd.sock',
  cniConfDirs: ['/data/cni/net.d', '/data/cni/kata.d'],
  cniBinDirs: ['/data/cni/bin'],
  cdiSpecDirs: ['/data/cdi/static', '/data/cdi/dynamic'],
  nriSocket: '/data/nri/nri.sock',
  nriPluginDirs: ['/data/nri/plugins'],
  nriConfDirs: ['/data/nri/conf.d'],
};

describe('containerd config versions', () => {
  it('reads versions 2, 3 and 4 of the same settings to the same paths', () => {
    for (const [name, version] of [
      ['config-v2.toml', 2],
      ['config-v3.toml', 3],
      ['config-v4.toml', 4],
    ] as const) {
      const p = containerdPaths([at(MAIN, name)]);
      expect(p.version, name).toBe(version);
      expect(paths(p), name).toEqual(FIXTURE_PATHS);
      expect(p.files, name).toEqual([MAIN]);
      expect(p.cdiEnabled, name).toBe(true);
      expect(p.nriEnabled, name).toBe(true);
    }
  });

  it('reads a version-2 config the same way with containerd 1.7 and with containerd 2.x (which migrates it)', () => {
    const v2 = [at(MAIN, 'config-v2.toml')];
    expect(paths(containerdPaths(v2, {}, { version: '1.7.24' }))).toEqual(FIXTURE_PATHS);
    expect(paths(containerdPaths(v2, {}, { version: '2.1.9' }))).toEqual(FIXTURE_PATHS);
    expect(paths(containerdPaths(v2, {}, { version: '2.3.0' }))).toEqual(FIXTURE_PATHS);
  });

  it('gives the defaults when no config file was read', () => {
    const p = containerdPaths([]);
    expect(p.version).toBeUndefined();
    expect(paths(p)).toEqual({
      root: '/var/lib/containerd',
      state: '/run/containerd',
      address: '/run/containerd/containerd.sock',
      cniConfDirs: ['/etc/cni/net.d'],
      cniBinDirs: ['/opt/cni/bin'],
      cdiSpecDirs: ['/etc/cdi', '/var/run/cdi'],
      nriSocket: '/var/run/nri/nri.sock',
      nriPluginDirs: ['/opt/nri/plugins'],
      nriConfDirs: ['/etc/nri/conf.d'],
    });
    expect(p.files).toEqual([]);
    expect(p.missing).toEqual([]);
    expect(paths(p)).toEqual(paths(CONTAINERD_DEFAULTS));
  });

  it('treats a file without `version` as version 1: short plugin names', () => {
    const p = containerdPaths([
      file(
        MAIN,
        `root = "/v1/root"
[plugins.cri.cni]
  bin_dir = "/v1/cni/bin"
  conf_dir = "/v1/cni/net.d"
[plugins.nri]
  socket_path = "/v1/nri.sock"
`,
      ),
    ]);
    expect(p.version).toBe(1);
    expect(p.root).toBe('/v1/root');
    expect(p.cniBinDirs).toEqual(['/v1/cni/bin']);
    expect(p.cniConfDirs).toEqual(['/v1/cni/net.d']);
    expect(p.nriSocket).toBe('/v1/nri.sock');
  });

  it('does not take a version-2 name from a version-3 file: containerd ignores it there', () => {
    const p = containerdPaths([
      file(
        MAIN,
        `version = 3
[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/old/place"
`,
      ),
    ]);
    expect(p.cniBinDirs).toEqual(['/opt/cni/bin']);
  });

  it('reads the socket of a version-4 file from the server plugin, not from [grpc]', () => {
    const p = containerdPaths([
      file(
        MAIN,
        `version = 4
[grpc]
  address = "/ignored.sock"
`,
      ),
    ]);
    expect(p.address).toBe('/run/containerd/containerd.sock');
  });
});

describe('imports', () => {
  it('resolves an import relative to the importing file, keeps globs, cleans the path', () => {
    expect(importsOf(at('/etc/containerd/config.toml', 'config-v3.toml'))).toEqual(['/etc/containerd/conf.d/*.toml']);
    expect(importsOf(file('/etc/containerd/config.toml', `imports = ["../x/./a.toml", "/abs/b.toml", "c/*.toml"]\n`))).toEqual([
      '/etc/x/a.toml',
      '/abs/b.toml',
      '/etc/containerd/c/*.toml',
    ]);
    expect(importsOf(file('/etc/containerd/config.toml', 'version = 2\n'))).toEqual([]);
  });

  it('merges an import (found by an expanded glob) over the main config: root, state, address', () => {
    const p = containerdPaths([at(MAIN, 'config-v3.toml'), at('/etc/containerd/conf.d/10-paths.toml', 'conf.d/10-paths.toml')]);
    expect(p.files).toEqual([MAIN, '/etc/containerd/conf.d/10-paths.toml']);
    expect(p.root).toBe('/srv/containerd/root');
    expect(p.state).toBe('/srv/containerd/state');
    expect(p.address).toBe('/srv/containerd/containerd.sock');
    // The drop-in set one key of the CRI runtime's cni table; containerd 2.x merges key by key.
    expect(p.cniConfDirs).toEqual(['/srv/cni/net.d', '/data/cni/kata.d']);
    expect(p.cniBinDirs).toEqual(['/data/cni/bin']);
    expect(p.missing).toEqual([]);
  });

  it('loads breadth first, glob matches sorted, each file once; the last file wins', () => {
    const p = containerdPaths([
      file(MAIN, `version = 3\nroot = "/main"\nimports = ["conf.d/*.toml", "/opt/extra.toml"]\n`),
      file('/opt/extra.toml', `version = 3\nroot = "/extra"\nimports = ["/etc/containerd/config.toml"]\n`),
      file('/etc/containerd/conf.d/20-b.toml', `version = 3\nroot = "/b"\nstate = "/b-state"\nimports = ["../nested.toml"]\n`),
      file('/etc/containerd/conf.d/10-a.toml', `version = 3\nroot = "/a"\nstate = "/a-state"\n`),
      file('/etc/containerd/nested.toml', `version = 3\nroot = "/nested"\n`),
      file('/etc/containerd/conf.d/sub/deep.toml', `version = 3\nroot = "/not-matched"\n`),
    ]);
    expect(p.files).toEqual([
      MAIN,
      '/etc/containerd/conf.d/10-a.toml',
      '/etc/containerd/conf.d/20-b.toml',
      '/opt/extra.toml',
      '/etc/containerd/nested.toml',
    ]);
    expect(p.root).toBe('/nested');
    expect(p.state).toBe('/b-state');
  });

  it('reports imports that were not given; a glob that matched nothing is not missing', () => {
    const p = containerdPaths([
      file(MAIN, `version = 2\nimports = ["runtime.toml", "/etc/containerd/gone.toml", "/etc/containerd/conf.d/*.toml"]\n`),
      file('/etc/containerd/runtime.toml', `version = 2\n[grpc]\n  address = "/run/rt.sock"\n`),
    ]);
    expect(p.files).toEqual([MAIN, '/etc/containerd/runtime.toml']);
    expect(p.missing).toEqual(['/etc/containerd/gone.toml']);
    expect(p.address).toBe('/run/rt.sock');
  });

  it('does not follow the conf.d import that containerd 2.2 only has in its built-in default', () => {
    const p = containerdPaths(
      [file(MAIN, `version = 3\nroot = "/main"\n`), file('/etc/containerd/conf.d/x.toml', `version = 3\nroot = "/dropin"\n`)],
      {},
      { version: '2.2.0' },
    );
    expect(p.files).toEqual([MAIN]);
    expect(p.root).toBe('/main');
  });

  it('replaces a plugin table whole in containerd 1.x and merges it key by key in 2.x', () => {
    const files = [
      file(
        MAIN,
        `version = 2
imports = ["registry.toml"]
[plugins."io.containerd.grpc.v1.cri".cni]
  conf_dir = "/custom/net.d"
  bin_dir = "/custom/bin"
`,
      ),
      file(
        '/etc/containerd/registry.toml',
        `version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"
`,
      ),
    ];
    const old = containerdPaths(files, {}, { version: '1.7.24' });
    expect(old.cniConfDirs).toEqual(['/etc/cni/net.d']);
    expect(old.cniBinDirs).toEqual(['/opt/cni/bin']);
    const now = containerdPaths(files, {}, { version: '2.1.9' });
    expect(now.cniConfDirs).toEqual(['/custom/net.d']);
    expect(now.cniBinDirs).toEqual(['/custom/bin']);
    // Without the daemon's version, version-2 files are read as containerd 1.7 reads them.
    expect(containerdPaths(files).cniConfDirs).toEqual(['/etc/cni/net.d']);
  });

  it('migrates a version-2 drop-in under a version-3 config in containerd 2.3, file by file', () => {
    const files = [
      file(MAIN, `version = 3\nimports = ["old.toml"]\n`),
      file('/etc/containerd/old.toml', `version = 2\n[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "/old/bin"\n[grpc]\n  address = "/old.sock"\n`),
    ];
    const p = containerdPaths(files, {}, { version: '2.3.1' });
    expect(p.cniBinDirs).toEqual(['/old/bin']);
    expect(p.address).toBe('/old.sock');
  });

  it('refuses, as containerd 2.3 does, a drop-in newer than the main config', () => {
    const files = [file(MAIN, `version = 2\nimports = ["new.toml"]\n`), file('/etc/containerd/new.toml', `version = 3\n`)];
    expect(() => containerdPaths(files, {}, { version: '2.3.0' })).toThrow(
      '/etc/containerd/new.toml: drop-in config version 3 is higher than root config version 2 (/etc/containerd/config.toml)',
    );
  });
});

describe('command line and CNI binaries', () => {
  it('lets --root, --state and --address win over the config and its imports', () => {
    const files = [at(MAIN, 'config-v3.toml'), at('/etc/containerd/conf.d/10-paths.toml', 'conf.d/10-paths.toml')];
    const p = containerdPaths(files, { root: '/flag/root', state: '/flag/state', address: '/flag/containerd.sock' });
    expect([p.root, p.state, p.address]).toEqual(['/flag/root', '/flag/state', '/flag/containerd.sock']);
    const v4 = containerdPaths([at(MAIN, 'config-v4.toml')], { address: '/flag/v4.sock' });
    expect(v4.address).toBe('/flag/v4.sock');
    expect(v4.root).toBe('/data/containerd/root');
  });

  const v3cni = (cni: string): ContainerdFile => file(MAIN, `version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\n${cni}\n`);

  it('reads version 3 `bin_dirs`, and the deprecated `bin_dir` in its place', () => {
    expect(containerdPaths([v3cni(`bin_dirs = ['/a', '/b']`)]).cniBinDirs).toEqual(['/a', '/b']);
    expect(containerdPaths([v3cni(`bin_dir = '/only'`)]).cniBinDirs).toEqual(['/only']);
    // bin_dirs left at containerd's default yields to bin_dir (ValidateRuntimeConfig).
    expect(containerdPaths([v3cni(`bin_dir = '/only'\nbin_dirs = ['/opt/cni/bin']`)]).cniBinDirs).toEqual(['/only']);
    // Both set otherwise: containerd's CRI plugin refuses to start; every directory named is kept.
    expect(containerdPaths([v3cni(`bin_dir = '/one'\nbin_dirs = ['/two']`)]).cniBinDirs).toEqual(['/two', '/one']);
    // containerd 2.0 had no bin_dirs yet.
    expect(containerdPaths([v3cni(`bin_dirs = ['/a']`)], {}, { version: '2.0.7' }).cniBinDirs).toEqual(['/opt/cni/bin']);
  });
});

describe('errors', () => {
  it('names the file and the line of TOML that does not parse', () => {
    const bad = `version = 2\nroot = "/var/lib/containerd"\n\n[plugins\n`;
    expect(() => containerdPaths([file('/etc/containerd/config.toml', bad)])).toThrow(/^\/etc\/containerd\/config\.toml line 4: /);
    expect(() => importsOf(file('/etc/containerd/conf.d/x.toml', 'a = \n'))).toThrow(/^\/etc\/containerd\/conf\.d\/x\.toml line 1: not valid TOML/);
    // In an import too, which names that file.
    const files = [file(MAIN, `version = 2\nimports = ["bad.toml"]\n`), file('/etc/containerd/bad.toml', `root = "unterminated\n`)];
    expect(() => containerdPaths(files)).toThrow(/^\/etc\/containerd\/bad\.toml line 1: /);
  });

  it('refuses a config version it does not know, saying which it knows', () => {
    expect(() => containerdPaths([file(MAIN, 'version = 5\n')])).toThrow(
      '/etc/containerd/config.toml: config version 5 is not one decom knows (it reads versions 1, 2, 3, 4)',
    );
    expect(() => containerdPaths([file(MAIN, 'version = "2"\n')])).toThrow(/^\/etc\/containerd\/config\.toml: `version` must be an integer/);
  });

  it('refuses a version the given daemon does not read, as containerd 2.x does', () => {
    expect(() => containerdPaths([at(MAIN, 'config-v4.toml')], {}, { version: '2.1.9' })).toThrow(
      /config version 4 is newer than containerd 2.1.9 reads \(versions up to 3\)/,
    );
  });

  it('names the file of a key of the wrong type', () => {
    expect(() => containerdPaths([file(MAIN, `version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\nbin_dirs = '/x'\n`)])).toThrow(
      '/etc/containerd/config.toml: `plugins."io.containerd.cri.v1.runtime".cni.bin_dirs` must be an array of strings',
    );
  });
});

describe("real defaults: `containerd config default` of Debian's builds", () => {
  it('1.6.20 (Debian 12): version 2, upstream paths, no CDI and no NRI', () => {
    const p = containerdPaths([at(MAIN, 'containerd-1.6.20-default.toml')], {}, { version: '1.6.20~ds1' });
    expect(p.version).toBe(2);
    expect(paths(p)).toEqual(paths(CONTAINERD_DEFAULTS));
    expect(p.cdiEnabled).toBe(false);
    expect(p.nriEnabled).toBe(false);
  });

  it('1.7.24 (Debian 13): CNI binaries in /usr/lib/cni; CDI and NRI off by default', () => {
    const p = containerdPaths([at(MAIN, 'containerd-1.7.24-default.toml')]);
    expect(p.version).toBe(2);
    expect(p.cniBinDirs).toEqual(['/usr/lib/cni']);
    expect(p.cniConfDirs).toEqual(['/etc/cni/net.d']);
    expect(p.cdiSpecDirs).toEqual(['/etc/cdi', '/var/run/cdi']);
    expect([p.nriSocket, p.nriPluginDirs, p.nriConfDirs]).toEqual(['/var/run/nri/nri.sock', ['/opt/nri/plugins'], ['/etc/nri/conf.d']]);
    expect(p.cdiEnabled).toBe(false); // enable_cdi = false, as printed
    expect(p.nriEnabled).toBe(false); // disable = true, as printed
  });

  it('2.1.9 (Debian testing): version 3, bin_dirs /usr/lib/cni then /opt/cni/bin; CDI and NRI on', () => {
    const p = containerdPaths([at(MAIN, 'containerd-2.1.9-default.toml')]);
    expect(p.version).toBe(3);
    expect([p.root, p.state, p.address]).toEqual(['/var/lib/containerd', '/run/containerd', '/run/containerd/containerd.sock']);
    expect(p.cniBinDirs).toEqual(['/usr/lib/cni', '/opt/cni/bin']);
    expect(p.cniConfDirs).toEqual(['/etc/cni/net.d']);
    expect(p.cdiSpecDirs).toEqual(['/etc/cdi', '/var/run/cdi']);
    expect(p.nriSocket).toBe('/var/run/nri/nri.sock');
    expect(p.cdiEnabled).toBe(true);
    expect(p.nriEnabled).toBe(true);
  });

  it("Debian's packaged /etc/containerd/config.toml: version 2, CNI binaries in /usr/lib/cni, with 1.x and 2.x alike", () => {
    const deb = [at(MAIN, 'debian-package-config.toml')];
    for (const version of ['1.6.20', '1.7.24', '2.1.9']) {
      const p = containerdPaths(deb, {}, { version });
      expect(p.version, version).toBe(2);
      expect(p.cniBinDirs, version).toEqual(['/usr/lib/cni']);
      expect(p.cniConfDirs, version).toEqual(['/etc/cni/net.d']);
      expect(p.root, version).toBe('/var/lib/containerd');
    }
  });
});

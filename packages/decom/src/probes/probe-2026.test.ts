/**
 * The probe's new views on real components of this machine, each in a namespace the
 * test makes and removes by name:
 * - containerd's config and its imports, found from the daemon's command line as the
 *   probe's own shell finds them (a process named containerd, in a PID namespace of
 *   its own, started with --config), then read as containerd reads them;
 * - the nftables tables of kube-proxy, Calico and flannel (test/fixtures/nft, real nft
 *   output), listed by name beside a user's table, removed by the firewall step's own
 *   actions, and the user's table left byte for byte.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ownNetns } from '../../test/helpers/netns.js';
import { emptyState, newNonce, stateFromSections } from './index.js';
import { splitSections } from './parse.js';
import { NFT_TABLES, probeScript } from './script.js';
import { containerdPaths } from '../cri/containerd-config.js';
import { findings } from '../rules/residue.js';
import { STEPS } from '../steps/index.js';
import type { StepContext } from '../engine/step.js';
import { tempDir } from '../../test/helpers/temp.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'test', 'fixtures');
const root = process.getuid?.() === 0;
const has = (p: string) => spawnSync('sh', ['-c', `command -v ${p}`]).status === 0;

/** The probe of `views`, run by sh (as on a node), with `prefix` before it; its sections. */
function probe(views: Parameters<typeof probeScript>[1], wrap: string[]): Map<string, string> {
  const nonce = newNonce();
  const r = spawnSync(wrap[0] as string, [...wrap.slice(1), 'sh', '-s'], { input: probeScript(nonce, views), encoding: 'utf8', timeout: 60_000 });
  const sections = splitSections(r.stdout, nonce);
  if (!sections.has('end')) throw new Error(`probe: exit ${r.status}: ${r.stderr}`);
  return sections;
}

describe.skipIf(!root || !has('unshare'))("containerd's config, as the probe finds it on a node", () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDir('decom-containerd-config-');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('follows the running daemon\'s --config, then its imports breadth first (relative to the importing file, globs expanded, each file once)', () => {
    mkdirSync(join(dir, 'conf.d'));
    const main = readFileSync(join(FIXTURES, 'containerd', 'config-v3.toml'), 'utf8');
    writeFileSync(join(dir, 'config.toml'), main);
    writeFileSync(join(dir, 'conf.d', '10-paths.toml'), readFileSync(join(FIXTURES, 'containerd', 'conf.d', '10-paths.toml'), 'utf8'));
    // A second drop-in imports the first again (read once) and a file that is not there.
    writeFileSync(join(dir, 'conf.d', '20-more.toml'), `version = 3\nimports = ["10-paths.toml", "${dir}/absent.toml"]\n`);
    // A process named containerd (a script's name is its comm), alone in a PID namespace with its own /proc; the runtime's view reads its config.
    const fake = join(dir, 'containerd');
    writeFileSync(fake, '#!/bin/sh\nsleep 30\n');
    chmodSync(fake, 0o755);
    const sections = probe(new Set(['containers']), ['unshare', '--pid', '--fork', '--mount-proc', 'sh', '-c', `${fake} --log-level info --config ${dir}/config.toml & sleep 0.3; exec "$@"`, 'probe']);
    const st = stateFromSections(sections, emptyState());
    const files = [`${dir}/config.toml`, `${dir}/conf.d/10-paths.toml`, `${dir}/conf.d/20-more.toml`];
    expect(st.containerd.files).toEqual(files);
    expect(sections.get('containerd-config')).toContain(`missing ${dir}/absent.toml\0`);
    expect(st.containerd).toEqual(containerdPaths(files.map((path) => ({ path, text: readFileSync(path, 'utf8') }))));
    // The import's paths win over the main file's (containerd merges later files over earlier ones).
    expect([st.containerd.root, st.containerd.state, st.containerd.address]).toEqual(['/srv/containerd/root', '/srv/containerd/state', '/srv/containerd/containerd.sock']);
    expect(st.containerd.missing).toEqual([`${dir}/absent.toml`]);
  });
});

describe.skipIf(!root || !has('nft') || !has('ip'))('the cluster\'s nftables tables on a real kernel (own netns)', () => {
  const netns = ownNetns('decom-nft-test');
  const inNs = netns.run;
  beforeEach(netns.make);
  afterEach(netns.remove);

  it('lists exactly the tables of kube-proxy, Calico and flannel by name, and the firewall step deletes exactly those', () => {
    const nft = (f: string) => readFileSync(join(FIXTURES, 'nft', f), 'utf8');
    for (const t of NFT_TABLES) inNs('nft -f -', nft(`${t.family}-${t.name}.txt`));
    inNs('nft -f -', nft('inet-app-filter.txt'));
    const user = inNs('nft list table inet app-filter');
    // What real nft prints is the fixtures' text: the shapes decom is tested on are nft's own.
    for (const t of NFT_TABLES) expect(inNs(`nft list table ${t.family} ${t.name}`)).toBe(nft(`${t.family}-${t.name}.txt`));

    const st = stateFromSections(probe(new Set(['firewall']), ['ip', 'netns', 'exec', netns.name]), emptyState());
    expect(st.nftTables).toEqual(NFT_TABLES.map(({ family, name }) => ({ family, name })));
    expect(findings(st).filter((f) => f.kind === 'nftables').map((f) => `${f.subject}: ${f.detail}`)).toEqual(NFT_TABLES.map((t) => `${t.family} ${t.name}: ${t.owner}`));

    const ctx = { params: {}, before: new Set() } as unknown as StepContext;
    const actions = STEPS.firewall!.plan(st, ctx);
    expect(actions.map((a) => a.what)).toEqual(NFT_TABLES.map((t) => `nft delete table ${t.family} ${t.name}`));
    for (const a of actions) inNs(a.script);
    expect(inNs('nft list tables')).toBe('table inet app-filter\n');
    expect(inNs('nft list table inet app-filter')).toBe(user);
    expect(user).toContain('tcp dport 8080 counter');
  });
});

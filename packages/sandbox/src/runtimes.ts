/**
 * The container runtimes a sandbox node can run, and where their binaries come from.
 *
 *   2     containerd 2.x from Debian testing (sid's when none of testing's runs here): the default
 *   1.7   containerd 1.7.x from Debian trixie
 *   1.6   containerd 1.6.20, Debian 12's own package: the host's, as installed
 *
 * scripts/fetch-runtimes.sh unpacks the newer ones (and the CNI plugins and kubectl
 * that go with them) into a cache, never over the host's packages, and records the
 * exact versions in versions.json. A node whose runtime is not the host's gets that
 * version's containerd, shim, ctr and unit bound read-only over the host's files, and
 * the newer CNI plugins over /usr/lib/cni (node-init.sh): each node sees its own
 * version, and the host and other nodes are untouched. 1.6 nodes keep Debian 12's
 * plugins (1.1.1), the pair Debian 12 ships.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { inputError } from 'decom/errors';
import { choiceList } from 'decom/flags';

export const RUNTIME_FAMILIES = ['2', '1.7', '1.6'] as const;
export type RuntimeFamily = (typeof RUNTIME_FAMILIES)[number];
export const DEFAULT_RUNTIME: RuntimeFamily = '2';

export const RUNTIME_CACHE = process.env.DECOM_RUNTIME_CACHE || '/var/cache/decom/runtimes';
const FETCH = 'packages/sandbox/scripts/fetch-runtimes.sh (./scripts/setup runs it)';

/** One unpacked package of the cache, as versions.json records it. */
export interface CachedPackage {
  package: string;
  /** Debian's version string, e.g. 2.1.9+ds1-5. */
  version: string;
  /** The suite it came from, e.g. testing. */
  suite: string;
  /** Where it is unpacked (dpkg -x). */
  root: string;
}

interface Manifest {
  fetchedAt: string;
  components: Partial<Record<'containerd-2' | 'containerd-1.7' | 'cni' | 'kubectl', CachedPackage>>;
  skipped: { component: string; package: string; version: string; suite: string; why: string }[];
}

/** What a node runs: the family asked for, the exact packages, and what node-init binds over the host's files. */
export interface NodeRuntime {
  family: RuntimeFamily;
  /** containerd's Debian version on the node. */
  containerd: string;
  /** Where it came from: "Debian testing", or "this host's Debian 12 package". */
  source: string;
  /** The CNI plugins' Debian version on the node. */
  cni: string;
  /** Host path → node path, each bound read-only. Empty for the host's own runtime. */
  binds: { source: string; target: string }[];
}

export function readManifest(): Manifest | undefined {
  const f = join(RUNTIME_CACHE, 'versions.json');
  if (!existsSync(f)) return undefined;
  try {
    return JSON.parse(readFileSync(f, 'utf8')) as Manifest;
  } catch (e) {
    throw inputError(`${f} is not readable JSON (${(e as Error).message}): run ${FETCH} again`);
  }
}

const hostVersion = (pkg: string): string => {
  try {
    return execFileSync('dpkg-query', ['-W', '-f', '${Version}', pkg], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || 'unknown';
  } catch {
    return 'not installed';
  }
};

/** A cached package that must be there, or an error saying how to fetch it. */
function cached(m: Manifest | undefined, component: keyof Manifest['components'], what: string): CachedPackage {
  const p = m?.components[component];
  if (!p || !existsSync(join(p.root, '.unpacked'))) {
    const why = m?.skipped.filter((s) => s.component === component).map((s) => `${s.package} ${s.version} (${s.suite}): ${s.why}`);
    // Fetching again would skip the same versions: say what runs instead.
    throw inputError(
      why?.length
        ? `${what} is not in the runtime cache ${RUNTIME_CACHE}: none in Debian's archive runs on this machine (${why.join('; ')}); use --containerd 1.6, this host's, until one does`
        : `${what} is not in the runtime cache ${RUNTIME_CACHE}: run ${FETCH}`,
    );
  }
  return p;
}

/** A version's containerd files bound over the host's: every program it ships, and its unit. */
function containerdBinds(root: string): NodeRuntime['binds'] {
  const bin = join(root, 'usr/bin');
  const binds = readdirSync(bin).map((f) => ({ source: join(bin, f), target: `/usr/bin/${f}` }));
  // Where the package ships its unit: /usr/lib since trixie, /lib before.
  const unit = ['usr/lib/systemd/system/containerd.service', 'lib/systemd/system/containerd.service'].map((u) => join(root, u)).find(existsSync);
  if (unit) binds.push({ source: unit, target: '/lib/systemd/system/containerd.service' });
  return binds;
}

export function resolveRuntime(family: RuntimeFamily): NodeRuntime {
  if (family === '1.6') {
    return { family, containerd: hostVersion('containerd'), source: "this host's Debian 12 package", cni: hostVersion('containernetworking-plugins'), binds: [] };
  }
  const m = readManifest();
  const containerd = cached(m, family === '2' ? 'containerd-2' : 'containerd-1.7', `containerd ${family}`);
  const cni = cached(m, 'cni', 'the CNI plugins');
  return {
    family,
    containerd: containerd.version,
    source: `Debian ${containerd.suite}`,
    cni: cni.version,
    binds: [...containerdBinds(containerd.root), { source: join(cni.root, 'usr/lib/cni'), target: '/usr/lib/cni' }],
  };
}

/** `--containerd 2,1.7`: one family per node, in turn (as --scenario). */
export const runtimeList = (text: string): RuntimeFamily[] => choiceList('--containerd', 'runtime', text, RUNTIME_FAMILIES);

/** The kubectl the tests drive the sandbox API with (the newest fetched), if the cache has it. */
export function cachedKubectl(): string | undefined {
  const p = readManifest()?.components.kubectl;
  const bin = p && join(p.root, 'usr/bin/kubectl');
  return bin && existsSync(bin) ? bin : undefined;
}

/**
 * decom's audit image (packages/decom/deploy/Dockerfile: what the CronJob and the DaemonSet run), built
 * from the unchanged Dockerfile as a user builds it, on this Debian 12 machine with no
 * registry and no daemon, and exported as an OCI archive for `ctr -n k8s.io images import`.
 *
 * - The base, node:VERSION-bookworm-slim (this machine's Node.js 20), is made here instead of pulled: Debian bookworm
 *   minbase (mmdebstrap, from this machine's apt mirror) plus this machine's Node.js 20,
 *   laid out as the official image lays it out.
 * - buildah builds the Dockerfile on it with --pull=never and --network host: buildah's
 *   own network would add a bridge and NAT rules to this machine's firewall.
 * - `npm ci` in the build trusts this machine's npm CAs and registry through a read-only
 *   bind mount over the image's empty /usr/local/etc (npm's global npmrc lives there).
 *   A build mount is never committed: the image holds neither file.
 *
 * What it keeps: IMAGE_DIR (buildah's storage, the archive) and RUN_DIR (buildah's and
 * runc's run state, on tmpfs). `rm -rf` of the two removes all of it. Nothing else on
 * the machine changes; buildah's one write outside them (its blob-info cache, hardwired
 * to /var/lib/containers) lands in IMAGE_DIR through an overlay seen only by buildah.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { run } from 'decom/run';
import { parseMountinfo } from 'decom/parse';
import { inputError } from 'decom/errors';
import { requirePrograms, requireRoot } from './prereq.js';

export const IMAGE_DIR = '/var/cache/decom/image';
export const RUN_DIR = '/run/decom/image';
/**
 * The name the Dockerfile's FROM asks for, as buildah resolves it locally: pinned to this
 * machine's Node.js (the base is made from it), passed as the Dockerfile's NODE_VERSION.
 */
export const BASE_REF = `docker.io/library/node:${process.versions.node}-bookworm-slim`;
/** The checkout: the image's build context (the lock file is the workspace's). */
const CHECKOUT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

const dirs = {
  storage: join(IMAGE_DIR, 'storage'), // buildah --root: images and layers
  tmp: join(IMAGE_DIR, 'tmp'), // TMPDIR for buildah and mmdebstrap (layer blobs, the chroot)
  base: join(IMAGE_DIR, 'base'), // the base's rootfs while it is made; removed after
  npm: join(IMAGE_DIR, 'npm'), // npmrc + CA bundle, bind-mounted into the build only
  varlib: join(IMAGE_DIR, 'varlib'), // upper and work dirs of buildah's /var/lib overlay
  etc: join(IMAGE_DIR, 'etc'), // upper and work dirs of buildah's /etc overlay
};

export interface AuditImage {
  /** The OCI archive: `ctr -n k8s.io images import ARCHIVE` names the image `ref`. */
  archive: string;
  ref: string;
  /** The archive's size (gzip layers), and the image's unpacked size (its layers' tars). */
  bytes: number;
  imageBytes: number;
  seconds: number;
  /** What the base is and whether this build made it or reused it. */
  base: string;
}

/**
 * Runs buildah on decom's own storage. It runs in a private mount namespace where
 * /var/lib and /etc are overlays whose writes land in IMAGE_DIR: `buildah commit`
 * writes its blob-info cache to /var/lib/containers/cache whatever --root says
 * (buildah #3388), and its network setup makes /etc/cni/net.d/cni.lock even with
 * --network host (this machine's /etc is what the sandbox's nodes see).
 */
export async function buildah(args: readonly string[], what: string): Promise<string> {
  const layers = [dirs.varlib, dirs.etc].flatMap((d) => [join(d, 'upper'), join(d, 'work')]);
  for (const d of layers) mkdirSync(d, { recursive: true });
  mkdirSync(dirs.tmp, { recursive: true });
  const over = (dir: string, n: number) => `mount -t overlay decom-image -o "lowerdir=${dir},upperdir=$${n},workdir=$${n + 1}" ${dir}`;
  const overlays = `${over('/var/lib', 1)} && ${over('/etc', 3)} && shift 4 && exec "$@"`;
  return step(what, 'unshare', [
    '--mount', '--propagation', 'private', '--',
    'sh', '-c', overlays, 'sh', ...layers,
    'buildah', '--root', dirs.storage, '--runroot', RUN_DIR, '--storage-driver', 'overlay',
    '--short-name-alias-conf', join(IMAGE_DIR, 'short-name-aliases.conf'), ...args,
  ], { env: { ...process.env, TMPDIR: dirs.tmp } });
}

/** runc keeps its container state under RUN_DIR, not /run/runc: for `buildah build` and `buildah run`. */
export const RUNC_ROOT = ['--runtime-flag', `root=${join(RUN_DIR, 'runc')}`];

/**
 * One program run as one named step: a failure is one line naming the step and its last
 * words, its whole output kept in IMAGE_DIR/failed-step.log.
 */
async function step(what: string, file: string, args: readonly string[], opts: Parameters<typeof run>[2] = {}): Promise<string> {
  const r = await run(file, args, opts);
  if (r.code !== 0) {
    const why = (r.stderr.trim() || r.stdout.trim()).split('\n').slice(-3).join(' | ');
    const log = join(IMAGE_DIR, 'failed-step.log');
    mkdirSync(IMAGE_DIR, { recursive: true });
    writeFileSync(log, `$ ${[file, ...args].join(' ')}\n${r.stdout}\n${r.stderr}`);
    throw new Error(`audit image: ${what} failed (exit ${r.code})${why ? `: ${why}` : ''} (all of it: ${log})`);
  }
  return r.stdout;
}

/**
 * This machine's Debian mirror for bookworm, its updates and its security suite, as
 * one-line sources for mmdebstrap ("deb URI SUITE main"), from /etc/apt/sources.list,
 * sources.list.d/*.list and sources.list.d/*.sources.
 */
export function debianSources(): string[] {
  const suites = ['bookworm', 'bookworm-updates', 'bookworm-security'];
  const found = new Map<string, string>();
  const add = (types: string[], uri: string | undefined, names: string[], components: string[]) => {
    if (!uri || !types.includes('deb') || !components.includes('main')) return;
    for (const s of names) if (suites.includes(s) && !found.has(s)) found.set(s, uri);
  };
  const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8') : '');
  const d = '/etc/apt/sources.list.d';
  const inD = existsSync(d) ? readdirSync(d).sort() : [];
  for (const f of ['/etc/apt/sources.list', ...inD.filter((n) => n.endsWith('.list')).map((n) => join(d, n))]) {
    for (const line of read(f).split('\n')) {
      const w = line.replace(/#.*/, '').replace(/\[[^\]]*\]/, '').trim().split(/\s+/);
      add([w[0] ?? ''], w[1], [w[2] ?? ''], w.slice(3));
    }
  }
  for (const f of inD.filter((n) => n.endsWith('.sources')).map((n) => join(d, n))) {
    for (const stanza of read(f).split(/\n\s*\n/)) {
      const field = (k: string) => (stanza.match(new RegExp(`^${k}:[ \\t]*(.*)$`, 'mi'))?.[1] ?? '').trim().split(/\s+/);
      if (field('Enabled')[0]?.toLowerCase() === 'no') continue;
      add(field('Types'), field('URIs')[0], field('Suites'), field('Components'));
    }
  }
  if (!found.has('bookworm')) throw inputError('audit image: no Debian bookworm mirror in /etc/apt/sources.list(.d): the base image is made from it');
  return suites.filter((s) => found.has(s)).map((s) => `deb ${found.get(s)} ${s} main`);
}

/** Mounts under IMAGE_DIR or RUN_DIR: a wipe must not delete through one. */
function mountsUnder(): string[] {
  return parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'))
    .map((m) => m.target)
    .filter((m) => [IMAGE_DIR, RUN_DIR].some((d) => m === d || m.startsWith(`${d}/`)));
}

/** From nothing: no base, no layers, no archive. */
function wipe(): void {
  const mounts = mountsUnder();
  if (mounts.length) throw inputError(`audit image: ${mounts[0]} is mounted (a build still running?): unmount it before building without cache`);
  rmSync(IMAGE_DIR, { recursive: true, force: true });
  rmSync(RUN_DIR, { recursive: true, force: true });
}

/** The official image's entrypoint, in effect: `node` when the first word is an option or no command. */
const ENTRYPOINT = `#!/bin/sh
set -e
if [ "\${1#-}" != "\${1}" ] || [ -z "$(command -v "\${1}")" ] || { [ -f "\${1}" ] && ! [ -x "\${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
`;

/**
 * node:VERSION-bookworm-slim, made from Debian's packages and this machine's Node.js 20:
 * node in /usr/local/bin, npm and corepack in /usr/local/lib/node_modules with their
 * links, user and group node (1000, home /home/node), no apt lists or caches, no
 * device nodes (the runtime mounts /dev). Yarn, which the official image adds, is not.
 */
async function makeBase(log: (s: string) => void): Promise<void> {
  const node = realpathSync(process.execPath);
  const modules = join(dirname(dirname(node)), 'lib', 'node_modules');
  if (!existsSync(join(modules, 'npm'))) throw inputError(`audit image: no npm beside ${node} (looked in ${modules})`);
  const sources = debianSources();
  log(`base: making ${BASE_REF}: Debian bookworm minbase from ${sources[0]?.split(' ')[1]}, Node.js ${process.version} from ${node}`);
  rmSync(dirs.base, { recursive: true, force: true });
  const rootfs = join(dirs.base, 'rootfs');
  mkdirSync(dirs.base, { recursive: true });
  mkdirSync(dirs.tmp, { recursive: true });
  // debian:bookworm-slim's dpkg excludes: no docs but copyrights, no man pages, no locales.
  const slim = ['/usr/share/doc/*', '/usr/share/man/*', '/usr/share/locale/*', '/usr/share/info/*', '/usr/share/groff/*', '/usr/share/lintian/*', '/usr/share/linda/*'];
  await step('base: mmdebstrap bookworm', 'mmdebstrap', [
    '--mode=root', '--variant=minbase', '--format=directory',
    ...slim.map((p) => `--dpkgopt=path-exclude=${p}`), '--dpkgopt=path-include=/usr/share/doc/*/copyright',
    'bookworm', rootfs, ...sources,
  ], { env: { ...process.env, TMPDIR: dirs.tmp } });

  log('base: Debian installed; laying out Node.js');
  // What mmdebstrap leaves that an image must not carry: device nodes, this machine's
  // hostname and resolver (the runtime provides all three), apt's lists and caches.
  for (const p of ['dev', 'var/lib/apt/lists']) for (const e of readdirSync(join(rootfs, p))) rmSync(join(rootfs, p, e), { recursive: true });
  for (const e of readdirSync(join(rootfs, 'var/cache/apt'))) if (e.endsWith('.bin')) rmSync(join(rootfs, 'var/cache/apt', e));
  rmSync(join(rootfs, 'etc', 'hostname'), { force: true });
  rmSync(join(rootfs, 'etc', 'resolv.conf'), { force: true });

  // Node.js where the official image's tarball puts it (/usr/local), with its links.
  const local = join(rootfs, 'usr', 'local');
  copyFileSync(node, join(local, 'bin', 'node'));
  chmodSync(join(local, 'bin', 'node'), 0o755);
  mkdirSync(join(local, 'lib', 'node_modules'), { recursive: true });
  const tools = ['npm', 'corepack'].filter((t) => existsSync(join(modules, t)));
  await step('base: cp -a npm', 'cp', ['-a', ...tools.map((t) => join(modules, t)), join(local, 'lib', 'node_modules')]);
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(local, 'bin', 'npm'));
  symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(local, 'bin', 'npx'));
  if (tools.includes('corepack')) symlinkSync('../lib/node_modules/corepack/dist/corepack.js', join(local, 'bin', 'corepack'));
  symlinkSync('node', join(local, 'bin', 'nodejs'));
  writeFileSync(join(local, 'bin', 'docker-entrypoint.sh'), ENTRYPOINT, { mode: 0o755 });
  const env = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };
  await step('base: chroot groupadd node', 'chroot', [rootfs, 'groupadd', '--gid', '1000', 'node'], { env });
  await step('base: chroot useradd node', 'chroot', [rootfs, 'useradd', '--uid', '1000', '--gid', 'node', '--shell', '/bin/bash', '--create-home', 'node'], { env });
  // The binary links libc, libstdc++, libgcc_s, libm: minbase must have them.
  await step('base: chroot node --version (are its libraries there?)', 'chroot', [rootfs, 'node', '--version'], { env });
  await step('base: chroot npm --version', 'chroot', [rootfs, 'npm', '--version'], { env: { ...env, HOME: '/root' } });

  log(`base: committing it into buildah's storage (${dirs.storage})`);
  // Into buildah's storage as one layer, ownership kept (ADD unpacks a local tar as is).
  await step('base: tar of the root', 'tar', ['--numeric-owner', '-C', rootfs, '-cf', join(dirs.base, 'rootfs.tar'), '.']);
  rmSync(rootfs, { recursive: true });
  writeFileSync(
    join(dirs.base, 'Containerfile'),
    [
      'FROM scratch',
      'ADD rootfs.tar /',
      `ENV PATH=${env.PATH} NODE_VERSION=${process.versions.node}`,
      'ENTRYPOINT ["docker-entrypoint.sh"]',
      'CMD ["node"]',
      '',
    ].join('\n'),
  );
  await buildah(['build', '--network', 'host', '--pull=never', '--layers', '--force-rm', ...RUNC_ROOT, '-t', BASE_REF, dirs.base], `base: buildah build ${BASE_REF}`);
  rmSync(dirs.base, { recursive: true });
}

/** The base's Node.js version (its NODE_VERSION), or null when buildah's storage has no base. */
async function baseNodeVersion(): Promise<string | null> {
  const names = await buildah(['images', '--format', '{{.Name}}:{{.Tag}}'], 'buildah images');
  if (!names.split('\n').includes(BASE_REF)) return null;
  const config = await inspectImage(BASE_REF);
  return config.Env?.find((e) => e.startsWith('NODE_VERSION='))?.slice('NODE_VERSION='.length) ?? null;
}

/** An image's OCI config (Env, Entrypoint, Cmd…), and the sizes of its uncompressed layers. */
export async function inspectImage(ref: string): Promise<{ Env?: string[]; Entrypoint?: string[] | null; Cmd?: string[] | null; User?: string; layerBytes: number }> {
  const j = JSON.parse(await buildah(['inspect', '--type', 'image', ref], `inspect ${ref}`)) as {
    OCIv1: { config?: { Env?: string[]; Entrypoint?: string[] | null; Cmd?: string[] | null; User?: string } };
    Manifest: string;
  };
  const layers = (JSON.parse(j.Manifest) as { layers: { size: number }[] }).layers;
  return { ...j.OCIv1.config, layerBytes: layers.reduce((n, l) => n + l.size, 0) };
}

/**
 * The npm settings `npm ci` needs inside the build, as this machine's npm has them (run
 * in the checkout: its .npmrc counts): the registry, proxies, and the CAs npm trusts —
 * npm's cafile, else Node's own roots plus NODE_EXTRA_CA_CERTS. Written to dirs.npm,
 * mounted read-only at /usr/local/etc for the build's RUN steps only.
 */
function npmSettings(checkout: string): void {
  const keys = ['registry', 'cafile', 'proxy', 'https-proxy', 'noproxy'];
  let out: string;
  try {
    out = execFileSync('npm', ['config', 'get', ...keys], { cwd: checkout, encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    throw new Error(`audit image: npm config get failed: ${(e as Error).message.split('\n')[0]}`);
  }
  const conf = new Map(out.split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const));
  const set = (k: string) => (conf.get(k) && conf.get(k) !== 'null' && conf.get(k) !== 'undefined' ? conf.get(k) : undefined);
  rmSync(dirs.npm, { recursive: true, force: true });
  mkdirSync(dirs.npm, { recursive: true });
  const extra = process.env.NODE_EXTRA_CA_CERTS;
  const cafile = set('cafile');
  const bundle = cafile ? readFileSync(cafile, 'utf8') : extra ? [...rootCertificates, readFileSync(extra, 'utf8')].join('\n') : null;
  const lines = ['registry', 'proxy', 'https-proxy', 'noproxy'].flatMap((k) => (set(k) ? [`${k}=${set(k)}`] : []));
  if (bundle) {
    writeFileSync(join(dirs.npm, 'build-ca.pem'), bundle);
    lines.push('cafile=/usr/local/etc/build-ca.pem');
  }
  writeFileSync(join(dirs.npm, 'npmrc'), `${lines.join('\n')}\n`);
}

/** Builds the audit image from `checkout` (default: this one) and exports it. Needs root. */
export async function buildAuditImage(opts: { cache: boolean; checkout?: string; log?: (s: string) => void }): Promise<AuditImage> {
  const t0 = performance.now();
  const log = (s: string) => opts.log?.(`[${((performance.now() - t0) / 1000).toFixed(1)} s] ${s}`);
  const checkout = opts.checkout ?? CHECKOUT;
  requireRoot('decom sandbox image');
  requirePrograms(['buildah', 'mmdebstrap', 'runc', 'unshare']);
  if (process.versions.node.split('.')[0] !== '20') {
    throw inputError(`audit image: the base is node:20 and is made from this machine's Node.js, which is ${process.version}: run it with Node.js 20`);
  }
  const product = join(checkout, 'packages', 'decom');
  const dockerfile = join(product, 'deploy', 'Dockerfile');
  if (!existsSync(join(product, 'dist', 'cli.js')) || !existsSync(dockerfile)) {
    throw inputError(`audit image: ${product} has no dist/cli.js or deploy/Dockerfile: run \`npm ci && npm run build\` in ${checkout} first`);
  }
  const version = (JSON.parse(readFileSync(join(product, 'package.json'), 'utf8')) as { version: string }).version;
  const tag = `decom:${version}`;
  // The full name as the OCI ref: ctr import keeps a full name as is (CRI then finds
  // `image: decom:VERSION`), and would prefix a bare tag with "import-DATE".
  const ref = `docker.io/library/decom:${version}`;
  const archive = join(IMAGE_DIR, `decom-${version}.oci.tar`);

  if (!opts.cache) wipe();
  rmSync(join(IMAGE_DIR, 'failed-step.log'), { force: true });
  mkdirSync(RUN_DIR, { recursive: true });
  const had = opts.cache ? await baseNodeVersion() : null;
  let base = `${BASE_REF} (Debian bookworm minbase, Node.js ${process.version}): `;
  if (had === process.versions.node) base += 'reused';
  else {
    if (had) log(`base: has Node.js v${had}, this machine v${process.versions.node}: making it again`);
    await makeBase(log);
    base += 'made';
  }

  log(`building ${tag} from ${dockerfile}${opts.cache ? ' (cached layers reused)' : ''}`);
  try {
    npmSettings(checkout);
    await buildah(
      ['build', '--network', 'host', '--pull=never', '--layers', '--force-rm', ...RUNC_ROOT, '--build-arg', `NODE_VERSION=${process.versions.node}`, '-v', `${dirs.npm}:/usr/local/etc:ro`, '-f', dockerfile, '-t', tag, checkout],
      `buildah build ${tag} (packages/decom/deploy/Dockerfile)`,
    );
  } finally {
    rmSync(dirs.npm, { recursive: true, force: true }); // npm's settings live only as long as the build
  }

  log(`exporting ${archive} as ${ref}`);
  rmSync(archive, { force: true });
  await buildah(['push', tag, `oci-archive:${archive}:${ref}`], `buildah push ${tag} to ${archive}`);
  const imageBytes = (await inspectImage(tag)).layerBytes;
  log('done');
  return { archive, ref, bytes: statSync(archive).size, imageBytes, seconds: (performance.now() - t0) / 1000, base };
}

// deploy/Dockerfile's image built as on a fresh machine (no cache: the base made from
// Debian's packages, every layer built), then looked at from inside and from its archive.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildah, buildAuditImage, inspectImage, RUNC_ROOT, type AuditImage } from '../../src/audit-image.js';
import { CHECKOUT, ROOT } from '../../../decom/test/helpers/sandbox.js';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const CONTAINER = 'decom-audit-image-test'; // buildah's working container, removed by name
const removeContainer = async () => {
  const names = await buildah(['containers', '--all', '--format', '{{.ContainerName}}'], 'buildah containers');
  if (names.split('\n').includes(CONTAINER)) await buildah(['rm', CONTAINER], `buildah rm ${CONTAINER}`);
};
const tarList = (archive: string, member: string, gzip: boolean) =>
  execFileSync('sh', ['-c', `tar -xOf "$1" "$2" | tar -t${gzip ? 'z' : ''}f -`, 'sh', archive, member], { encoding: 'utf8', maxBuffer: 256 << 20 });

describe('the audit image (deploy/Dockerfile), built here with no registry and no daemon', () => {
  let image: AuditImage;
  // What buildah would write to this machine's /etc (which the sandbox's nodes see through their overlay).
  const HOST_ETC = ['/etc/cni', '/etc/containers/networks'];
  const etcBefore = HOST_ETC.filter((p) => existsSync(p));
  // As root, to look everywhere in it; `asImageUser` as the image runs (its USER).
  const inImage = (command: string) => buildah(['run', '--network', 'host', ...RUNC_ROOT, '--user', '0:0', CONTAINER, '--', 'sh', '-c', command], `run ${command}`);
  const asImageUser = (command: string) => buildah(['run', '--network', 'host', ...RUNC_ROOT, CONTAINER, '--', 'sh', '-c', command], `run ${command}`);
  // As the CronJob runs it: user 65532 on a read-only root, /tmp alone writable (its emptyDir). buildah run has no
  // read-only root: root, with CAP_SYS_ADMIN, remounts it read-only in a mount namespace of its own, then drops to 65532.
  const readOnlyAsImageUser = (command: string) =>
    buildah(
      ['run', '--network', 'host', ...RUNC_ROOT, '--user', '0:0', '--cap-add', 'CAP_SYS_ADMIN', CONTAINER, '--', 'unshare', '--mount', 'sh', '-c',
        'mount -t tmpfs -o mode=1777 tmpfs /tmp && mount -o remount,bind,ro / && cd /tmp && exec setpriv --reuid 65532 --regid 65532 --clear-groups --inh-caps=-all sh -c "$1"', 'sh', command],
      `run read-only ${command}`,
    );

  beforeAll(async () => {
    image = await buildAuditImage({ cache: false, log: (l) => process.stderr.write(`image: ${l}\n`) });
    // The cold figure, for whoever reads the run: printed, and kept beside vitest's report.
    mkdirSync(join(CHECKOUT, 'test-results'), { recursive: true });
    writeFileSync(join(CHECKOUT, 'test-results', 'audit-image.json'), `${JSON.stringify({ coldSeconds: image.seconds, ...image }, null, 2)}\n`);
    process.stderr.write(`audit image: cold build ${image.seconds.toFixed(1)} s, archive ${(image.bytes / 1e6).toFixed(1)} MB, ${(image.imageBytes / 1e6).toFixed(1)} MB unpacked (test-results/audit-image.json)\n`);
    await removeContainer(); // a leftover from a killed run
    await buildah(['from', '--name', CONTAINER, '--pull=never', `decom:${VERSION}`], 'buildah from');
  }, 900_000);

  afterAll(removeContainer);

  it("writes nothing to this machine's /etc: buildah's CNI lock and network files stay in its own storage", () => {
    expect(HOST_ETC.filter((p) => existsSync(p))).toEqual(etcBefore);
  });

  it("runs decom --version as its own user, not root, and prints package.json's version", async () => {
    expect((await asImageUser('decom --version; id -u')).trim()).toBe(`${VERSION}\n65532`);
  });

  it("has Debian's OpenSSH client for the OpenSSH transport, and user 65532 a passwd entry (ssh needs one) and a home of its own", async () => {
    const [version, ...rest] = (await asImageUser('ssh -V 2>&1; id -un; getent passwd 65532; stat -c "%U:%G %a" "$(getent passwd 65532 | cut -d: -f6)"')).trim().split('\n');
    expect(version).toMatch(/^OpenSSH_9\.2p1 Debian-/);
    expect(rest).toEqual(['decom', 'decom:x:65532:65532::/home/decom:/usr/sbin/nologin', 'decom:decom 700']);
  });

  it("runs ssh as the CronJob does, user 65532 on a read-only root with /tmp writable: ssh -G and a connection to a host need no write to the home", async () => {
    // A server that sends its banner and hangs up: ssh reads its config and keys, connects, and fails at the key exchange.
    const out = await readOnlyAsImageUser(
      [
        'touch /home/decom/x 2>&1 | sed "s/.*: //"; touch x && echo tmp writable',
        'ssh -G somehost true >g 2>e; echo "ssh -G: exit $?, $(wc -c <e) bytes on stderr"; grep -E "^(user|hostname|userknownhostsfile) " g',
        `node -e 'const s = require("net").createServer((c) => { c.end("SSH-2.0-banner-only\\r\\n"); s.close(); }).listen(0, "127.0.0.1", () => console.log(s.address().port)); setTimeout(() => s.close(), 10000).unref()' >port &`,
        'until [ -s port ]; do sleep 0.05; done',
        'ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=/tmp/known_hosts -o ControlMaster=yes -o ControlPath=/tmp/cm -p "$(cat port)" 127.0.0.1 true 2>&1 | tr -d "\\r" | sed "s/port [0-9]*$/port N/"',
      ].join('\n'),
    );
    expect(out.trim().split('\n')).toEqual([
      'Read-only file system',
      'tmp writable',
      'ssh -G: exit 0, 0 bytes on stderr',
      'user decom',
      'hostname somehost',
      'userknownhostsfile /home/decom/.ssh/known_hosts /home/decom/.ssh/known_hosts2',
      'Connection closed by 127.0.0.1 port N', // and no "Could not create directory '/home/decom/.ssh'"
    ]);
  });

  it('has decom as its entrypoint, with no command left from the base, user 65532 (the CronJob\'s), and its base pinned to this machine\'s Node.js', async () => {
    const config = await inspectImage(`decom:${VERSION}`);
    expect(config.Entrypoint).toEqual(['decom']);
    expect(config.Cmd ?? null).toBeNull();
    expect(config.User).toBe('65532');
    expect(config.Env).toContain(`NODE_VERSION=${process.versions.node}`);
    // A user's `docker build` without the argument gets a full version too, never a moving tag.
    expect(readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8')).toMatch(/^ARG NODE_VERSION=20\.\d+\.\d+$/m);
  });

  it('holds decom alone: its build, playbooks and production dependencies, no module of the sandbox package', async () => {
    const files = (dir: string) =>
      readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => relative(dir, join(e.parentPath, e.name)))
        .sort();
    expect((await inImage('ls -A /opt/decom')).trim().split('\n')).toEqual(['dist', 'node_modules', 'package.json', 'playbooks']);
    // dist is decom's build, file for file; the sandbox's modules are in none of it.
    const dist = (await inImage('cd /opt/decom/dist && find . -type f | sed "s|^./||" | sort')).trim().split('\n');
    expect(dist).toEqual(files(join(ROOT, 'dist')));
    const sandboxModules = files(join(CHECKOUT, 'packages', 'sandbox', 'dist'));
    expect(sandboxModules.length).toBeGreaterThan(20);
    expect(dist.filter((p) => sandboxModules.includes(p))).toEqual([]);
    const everywhere = (await inImage('find / -xdev -printf "%P\\n"')).split('\n');
    expect(everywhere.filter((p) => /decom-sandbox|packages\/sandbox/.test(p))).toEqual([]);
    expect((await inImage('ls /opt/decom/node_modules')).split('\n')).not.toContain('decom-sandbox');
  });

  it("keeps neither the build's npmrc nor its CA bundle, in the image or in any layer", async () => {
    expect((await inImage('ls -A /usr/local/etc; find / -xdev \\( -name npmrc -o -name build-ca.pem \\) -print')).trim()).toBe('');
    const index = JSON.parse(execFileSync('tar', ['-xOf', image.archive, 'index.json'], { encoding: 'utf8' })) as { manifests: { digest: string }[] };
    const blob = (d: string) => `blobs/sha256/${d.replace('sha256:', '')}`;
    const manifest = JSON.parse(execFileSync('tar', ['-xOf', image.archive, blob(index.manifests[0]?.digest ?? '')], { encoding: 'utf8' })) as {
      layers: { digest: string; mediaType: string }[];
    };
    expect(manifest.layers.length).toBeGreaterThan(1);
    for (const layer of manifest.layers) {
      const names = tarList(image.archive, blob(layer.digest), layer.mediaType.endsWith('gzip')).split('\n');
      expect(names.filter((n) => /usr\/local\/etc\/./.test(n) || /(^|\/)(npmrc|build-ca\.pem)$/.test(n))).toEqual([]);
    }
  });

  it("is based on node:VERSION-bookworm-slim (this machine's Node.js 20) as the official image lays it out", async () => {
    expect(image.base.startsWith(`docker.io/library/node:${process.versions.node}-bookworm-slim `) && image.base.endsWith(': made'), image.base).toBe(true);
    const out = await inImage('node --version; id node; stat -c %u:%g /home/node; readlink /usr/local/bin/npm; echo "lists:$(ls -A /var/lib/apt/lists)"');
    expect(out.trim().split('\n')).toEqual([
      process.version, // this machine's Node.js 20, in /usr/local/bin
      'uid=1000(node) gid=1000(node) groups=1000(node)',
      '1000:1000',
      '../lib/node_modules/npm/bin/npm-cli.js',
      'lists:', // no apt lists, as slim
    ]);
  });

  it(`is exported as an OCI archive that containerd names ${`docker.io/library/decom:${VERSION}`}`, () => {
    expect(existsSync(image.archive)).toBe(true);
    expect(image.ref).toBe(`docker.io/library/decom:${VERSION}`);
    const index = JSON.parse(execFileSync('tar', ['-xOf', image.archive, 'index.json'], { encoding: 'utf8' })) as {
      manifests: { annotations?: Record<string, string> }[];
    };
    expect(index.manifests.map((m) => m.annotations?.['org.opencontainers.image.ref.name'])).toEqual([image.ref]);
  });
});

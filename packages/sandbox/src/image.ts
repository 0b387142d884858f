/** The container images the sandbox's nodes run: static busybox and a pause image over one layer, built locally into one tar. */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, closeSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { runOk } from 'decom/run';
import { inputError } from 'decom/errors';

/** The image every sandbox container runs: static busybox, built locally. */
export const IMAGE = 'registry.k8s.io/busybox:sandbox';
/**
 * containerd's `sandbox_image`: the same layer, with a default command that blocks
 * forever, as the real pause does. Its name is kubespray's and kubeadm's (Kubernetes
 * 1.29–1.31), so the purge tier judges it as it would the real one. Nothing is pulled.
 */
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.9';
const APPLETS = ['sh', 'httpd', 'sleep', 'nc', 'ls', 'cat', 'echo', 'true', 'ps'];

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

function assertStatic(path: string): void {
  const head = Buffer.alloc(4096);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  if (head.includes('ld-linux')) {
    throw inputError(`${path} is dynamically linked; containers need the static one (apt-get install -y busybox-static)`);
  }
}

/**
 * Writes an image tar that both `ctr image import` (OCI layout) and `docker load`
 * (manifest.json) accept, so containerd and Docker nodes share one artefact. It holds
 * two images over one layer: busybox (a shell by default) and the pause image.
 */
export async function buildImage(out: string): Promise<void> {
  if (existsSync(out)) return;
  assertStatic('/bin/busybox');
  const work = mkdtempSync(join(tmpdir(), 'decom-image-'));
  try {
    const rootfs = join(work, 'rootfs');
    mkdirSync(join(rootfs, 'bin'), { recursive: true });
    copyFileSync('/bin/busybox', join(rootfs, 'bin', 'busybox'));
    for (const a of APPLETS) symlinkSync('busybox', join(rootfs, 'bin', a));
    const layerTar = join(work, 'layer.tar');
    await runOk('tar', ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '-C', rootfs, '-cf', layerTar, '.']);
    const layout = join(work, 'layout');
    const blobs = join(layout, 'blobs', 'sha256');
    mkdirSync(blobs, { recursive: true });
    const blob = (data: Buffer | string) => {
      const digest = sha256(data);
      writeFileSync(join(blobs, digest), data);
      return { digest: `sha256:${digest}`, size: Buffer.byteLength(data), path: `blobs/sha256/${digest}` };
    };
    const layer = blob(readFileSync(layerTar));
    const image = (name: string, ref: string, cmd: string[]) => {
      const config = blob(
        JSON.stringify({
          architecture: 'amd64',
          os: 'linux',
          config: { Env: ['PATH=/bin'], Cmd: cmd },
          rootfs: { type: 'layers', diff_ids: [layer.digest] },
        }),
      );
      const manifest = blob(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: config.digest, size: config.size },
          layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layer.digest, size: layer.size }],
        }),
      );
      return {
        oci: { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: manifest.digest, size: manifest.size, annotations: { 'io.containerd.image.name': name, 'org.opencontainers.image.ref.name': ref } },
        docker: { Config: config.path, RepoTags: [name], Layers: [layer.path] },
      };
    };
    const images = [image(IMAGE, 'sandbox', ['/bin/sh']), image(PAUSE_IMAGE, '3.9', ['/bin/sleep', '2147483647'])];
    writeFileSync(join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: images.map((i) => i.oci) }));
    writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    writeFileSync(join(layout, 'manifest.json'), JSON.stringify(images.map((i) => i.docker)));
    const tmp = `${out}.tmp`;
    await runOk('tar', ['-C', layout, '-cf', tmp, '.']);
    await runOk('mv', [tmp, out]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

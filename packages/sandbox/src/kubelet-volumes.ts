/**
 * The kubelet stand-in's volume manager for API pods: before the sandbox starts, each
 * volume the pod names is made ready on the node, as the kubelet's volume plugins
 * (Kubernetes 1.32) lay them out under /var/lib/kubelet/pods/UID/volumes:
 *   - configMap, secret and projected volumes written by the atomic writer (files in a
 *     `..TIMESTAMP` dir, `..data` pointing at it, each key a link through `..data`);
 *     secrets and projected volumes on tmpfs, as they never touch the node's disk;
 *   - the projected ServiceAccount token from a TokenRequest bound to the pod;
 *   - a PersistentVolumeClaim through its bound PersistentVolume (hostPath, local, or
 *     the sandbox's CSI driver's);
 *   - hostPath with its type check; emptyDir, on tmpfs of its sizeLimit for medium Memory.
 * fsGroup is applied as SetVolumeOwnership does, to the volumes whose plugins support
 * it (emptyDir, configMap, secret, projected, local), never to a hostPath.
 */
import { chmodSync, chownSync, existsSync, lchownSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { ApiClient } from './api/client.js';
import { ContainerConfigError, PODS, tmpfsAt } from './kubelet-runtime.js';
import { quantity } from './api/volume-binder.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Why a pod cannot start yet, in the kubelet's event words (FailedMount). */
export class MountError extends Error {}

/** Where a volume is on the node, ready to bind into the containers. */
export interface ReadyVolume {
  name: string;
  hostPath: string;
  /** ConfigMap, Secret and projected volumes are mounted read-only, whatever the mount says. */
  readOnly?: boolean;
}

/** SetVolumeOwnership (pkg/volume/volume_linux.go): group fsGroup, group bits added, dirs setgid. */
function applyFsGroup(dir: string, fsGroup: number, readOnly: boolean): void {
  const walk = (p: string) => {
    const st = lstatSync(p);
    lchownSync(p, -1, fsGroup);
    if (st.isSymbolicLink()) return;
    let mask = readOnly ? 0o440 : 0o660;
    if (st.isDirectory()) {
      mask |= 0o2000 | 0o110;
      for (const n of readdirSync(p)) walk(join(p, n));
    }
    chmodSync(p, (st.mode & 0o7777) | mask);
  };
  walk(dir);
}

/**
 * The atomic writer's layout: every file in a fresh `..TIMESTAMP` dir, `..data` swapped
 * to it, a link per top-level name through `..data` (what a reader of the volume sees,
 * and why a ConfigMap update shows all keys at once).
 */
function writeAtomic(dir: string, files: { path: string; data: Buffer; mode: number; uid?: number }[]): void {
  mkdirSync(dir, { recursive: true });
  const stamp = `..${new Date().toISOString().replace(/[-:]/g, '_').replace('T', '_').slice(0, 19)}.${process.hrtime.bigint() % 1000000000n}`;
  const ts = join(dir, stamp);
  mkdirSync(ts, { mode: 0o755 });
  for (const f of files) {
    const target = join(ts, f.path);
    mkdirSync(join(target, '..'), { recursive: true });
    writeFileSync(target, f.data, { mode: f.mode });
    chmodSync(target, f.mode);
    if (f.uid !== undefined) chownSync(target, f.uid, -1);
  }
  const tmpLink = join(dir, '..data_tmp');
  rmSync(tmpLink, { force: true });
  symlinkSync(stamp, tmpLink);
  renameSync(tmpLink, join(dir, '..data'));
  const tops = new Set(files.map((f) => f.path.split('/')[0] as string));
  for (const top of tops) if (!existsSync(join(dir, top))) symlinkSync(join('..data', top), join(dir, top));
  // A key gone from the object takes its link with it.
  for (const n of readdirSync(dir)) if (!n.startsWith('..') && !tops.has(n) && lstatSync(join(dir, n)).isSymbolicLink()) rmSync(join(dir, n));
  for (const old of readdirSync(dir).filter((n) => n.startsWith('..') && n !== '..data' && n !== stamp)) rmSync(join(dir, old), { recursive: true, force: true });
}

const tmpfs = (dir: string, bytes?: number) =>
  tmpfsAt(dir, `mode=0755${bytes ? `,size=${bytes}` : ''}`).catch((e: unknown) => {
    throw new MountError((e as Error).message);
  });

/** A hostPath volume's path after its type check, as the hostPath plugin makes it (…OrCreate) and checks it. */
function hostPathReady(src: { path: string; type?: string }): string {
  const type = src.type ?? '';
  if (type === 'DirectoryOrCreate' && !existsSync(src.path)) mkdirSync(src.path, { recursive: true, mode: 0o755 });
  if (type === 'FileOrCreate' && !existsSync(src.path)) {
    mkdirSync(join(src.path, '..'), { recursive: true });
    writeFileSync(src.path, '', { mode: 0o644 });
  }
  const want: Record<string, [string, (st: Stats) => boolean]> = {
    Directory: ['a directory', (st) => st.isDirectory()], DirectoryOrCreate: ['a directory', (st) => st.isDirectory()],
    File: ['a file', (st) => st.isFile()], FileOrCreate: ['a file', (st) => st.isFile()], Socket: ['a socket', (st) => st.isSocket()],
    CharDevice: ['a character device', (st) => st.isCharacterDevice()], BlockDevice: ['a block device', (st) => st.isBlockDevice()],
  };
  const check = want[type];
  if (check && !(existsSync(src.path) && check[1](statSync(src.path)))) throw new MountError(`hostPath type check failed: ${src.path} is not ${check[0]}`);
  return src.path;
}

/** The downward API's fieldRef values a volume or env var may name. */
export function fieldValue(pod: Any, path: string, hostIP: string): string {
  const label = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (label) return pod.metadata?.[label[1] as string]?.[label[2] as string] ?? '';
  const plain: Record<string, string | undefined> = {
    'metadata.name': pod.metadata.name, 'metadata.namespace': pod.metadata.namespace, 'metadata.uid': pod.metadata.uid,
    'spec.nodeName': pod.spec.nodeName, 'spec.serviceAccountName': pod.spec.serviceAccountName, 'status.hostIP': hostIP, 'status.hostIPs': hostIP,
  };
  if (!(path in plain)) throw new ContainerConfigError(`unsupported fieldRef ${path}`);
  return plain[path] ?? '';
}

/** The keys of a ConfigMap or Secret as files: all of them, or `items` (a missing key is an error unless optional). */
function keyFiles(what: string, data: Record<string, Buffer>, items: Any[] | undefined, mode: number, optional: boolean): { path: string; data: Buffer; mode: number }[] {
  if (!items?.length) return Object.entries(data).map(([k, v]) => ({ path: k, data: v, mode }));
  return items.flatMap((i) => {
    const v = data[i.key];
    if (v === undefined) {
      if (optional) return [];
      throw new MountError(`configmap references non-existent config key: ${i.key}`.replace('configmap', what));
    }
    return [{ path: i.path, data: v, mode: i.mode ?? mode }];
  });
}

export class VolumeManager {
  constructor(
    private readonly api: ApiClient,
    private readonly hostIP: string,
  ) {}

  private async object(kind: 'configmaps' | 'secrets', ns: string, name: string, optional: boolean): Promise<Record<string, Buffer> | undefined> {
    const r = await this.api.request('GET', `/api/v1/namespaces/${ns}/${kind}/${name}`);
    if (r.code === 404) {
      if (optional) return undefined;
      throw new MountError(`${kind === 'secrets' ? 'secret' : 'configmap'} "${name}" not found`);
    }
    if (r.code !== 200) throw new MountError(`reading ${kind} ${ns}/${name}: ${r.code} ${r.body.message ?? ''}`);
    const out: Record<string, Buffer> = {};
    if (kind === 'secrets') for (const [k, v] of Object.entries((r.body.data ?? {}) as Record<string, string>)) out[k] = Buffer.from(v, 'base64');
    else {
      for (const [k, v] of Object.entries((r.body.data ?? {}) as Record<string, string>)) out[k] = Buffer.from(v);
      for (const [k, v] of Object.entries((r.body.binaryData ?? {}) as Record<string, string>)) out[k] = Buffer.from(v, 'base64');
    }
    return out;
  }

  /** One key of a ConfigMap or Secret, for an env var: a missing one refuses the container unless optional. */
  async keyOf(kind: 'configmaps' | 'secrets', ns: string, ref: Any): Promise<Buffer | undefined> {
    const what = kind === 'secrets' ? 'secret' : 'configmap';
    let data: Record<string, Buffer> | undefined;
    try {
      data = await this.object(kind, ns, ref.name, Boolean(ref.optional));
    } catch (e) {
      throw e instanceof MountError ? new ContainerConfigError(e.message) : e;
    }
    const v = data?.[ref.key];
    if (v === undefined && !ref.optional) throw new ContainerConfigError(`couldn't find key ${ref.key} in ${what} ${ns}/${ref.name}`);
    return v;
  }

  /** A TokenRequest for the pod's ServiceAccount, bound to the pod, as the kubelet's token manager makes it. */
  private async token(pod: Any, src: Any): Promise<Buffer> {
    const sa = pod.spec.serviceAccountName ?? 'default';
    const r = await this.api.request('POST', `/api/v1/namespaces/${pod.metadata.namespace}/serviceaccounts/${sa}/token`, {
      apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest',
      spec: { audiences: src.audience ? [src.audience] : [], expirationSeconds: src.expirationSeconds ?? 3600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: pod.metadata.uid } },
    });
    if (r.code !== 201 && r.code !== 200) throw new MountError(`failed to fetch token: ${r.body.message ?? r.code}`);
    return Buffer.from(r.body.status.token as string);
  }

  /** Every volume of the pod, ready on the node; a MountError says which and why. */
  async prepare(pod: Any): Promise<ReadyVolume[]> {
    const dir = `${PODS}/${pod.metadata.uid}/volumes`;
    const ns = pod.metadata.namespace as string;
    const sc = pod.spec.securityContext ?? {};
    const fsGroup = sc.fsGroup as number | undefined;
    // The token's owner when every container runs as one user (the kubelet's FsUser).
    const users = new Set((pod.spec.containers as Any[]).map((c) => c.securityContext?.runAsUser ?? sc.runAsUser));
    const fsUser = users.size === 1 ? ([...users][0] as number | undefined) : undefined;
    const out: ReadyVolume[] = [];
    for (const v of (pod.spec.volumes ?? []) as Any[]) {
      if (v.hostPath) {
        out.push({ name: v.name, hostPath: hostPathReady(v.hostPath) });
      } else if (v.emptyDir) {
        const path = join(dir, 'kubernetes.io~empty-dir', v.name);
        mkdirSync(path, { recursive: true });
        // A memory emptyDir is tmpfs of its sizeLimit (the kubelet's default is the node's memory; 64 MiB here).
        if (v.emptyDir.medium === 'Memory') await tmpfs(path, (v.emptyDir.sizeLimit ? quantity(v.emptyDir.sizeLimit) : NaN) || 64 * 2 ** 20);
        chmodSync(path, 0o777);
        if (fsGroup !== undefined) applyFsGroup(path, fsGroup, false);
        out.push({ name: v.name, hostPath: path });
      } else if (v.configMap || v.secret) {
        const secret = Boolean(v.secret);
        const src = v.secret ?? v.configMap;
        const path = join(dir, secret ? 'kubernetes.io~secret' : 'kubernetes.io~configmap', v.name);
        if (secret) await tmpfs(path);
        const data = (await this.object(secret ? 'secrets' : 'configmaps', ns, secret ? src.secretName : src.name, Boolean(src.optional))) ?? {};
        writeAtomic(path, keyFiles(secret ? 'secret' : 'configmap', data, src.items, src.defaultMode ?? 0o644, Boolean(src.optional)));
        if (fsGroup !== undefined) applyFsGroup(path, fsGroup, true);
        out.push({ name: v.name, hostPath: path, readOnly: true });
      } else if (v.projected) {
        const path = join(dir, 'kubernetes.io~projected', v.name);
        await tmpfs(path);
        const mode = v.projected.defaultMode ?? 0o644;
        const files: { path: string; data: Buffer; mode: number; uid?: number }[] = [];
        for (const s of (v.projected.sources ?? []) as Any[]) {
          if (s.serviceAccountToken) {
            // With an fsUser or fsGroup the token is 0600 (and its owner's), as the projected plugin writes it.
            const own = fsUser !== undefined || fsGroup !== undefined;
            files.push({ path: s.serviceAccountToken.path, data: await this.token(pod, s.serviceAccountToken), mode: own ? 0o600 : mode, ...(fsUser !== undefined ? { uid: fsUser } : {}) });
          } else if (s.configMap || s.secret) {
            const src = s.secret ?? s.configMap;
            const data = (await this.object(s.secret ? 'secrets' : 'configmaps', ns, src.name, Boolean(src.optional))) ?? {};
            files.push(...keyFiles(s.secret ? 'secret' : 'configmap', data, src.items, mode, Boolean(src.optional)));
          } else if (s.downwardAPI) {
            for (const i of (s.downwardAPI.items ?? []) as Any[]) files.push({ path: i.path, data: Buffer.from(fieldValue(pod, i.fieldRef?.fieldPath ?? '', this.hostIP)), mode: i.mode ?? mode });
          } else throw new MountError(`projected source ${Object.keys(s).join(', ')} is not supported by the sandbox's kubelet`);
        }
        writeAtomic(path, files);
        if (fsGroup !== undefined) applyFsGroup(path, fsGroup, true);
        out.push({ name: v.name, hostPath: path, readOnly: true });
      } else if (v.persistentVolumeClaim) {
        out.push({ name: v.name, hostPath: await this.claimed(pod, v.persistentVolumeClaim.claimName, fsGroup) });
      } else {
        throw new MountError(`volume "${v.name}": ${Object.keys(v).filter((k) => k !== 'name').join(', ')} is not a volume type the sandbox's kubelet mounts`);
      }
    }
    return out;
  }

  /**
   * A claim's PersistentVolume on this node; the pod waits until the claim is bound.
   * hostPath and local volumes are the node's own dirs; a CSI volume is the dir the
   * kubelet's CSI plugin publishes it at (…/volumes/kubernetes.io~csi/PV/mount, its
   * vol_data.json beside), left empty: the sandbox's CSI driver has no storage behind it.
   */
  private async claimed(pod: Any, claim: string, fsGroup: number | undefined): Promise<string> {
    const ns = pod.metadata.namespace as string;
    const pvc = await this.api.request('GET', `/api/v1/namespaces/${ns}/persistentvolumeclaims/${claim}`);
    if (pvc.code !== 200) throw new MountError(`persistentvolumeclaim "${claim}" not found`);
    const name = pvc.body.spec?.volumeName as string | undefined;
    if (!name || pvc.body.status?.phase !== 'Bound') throw new MountError(`persistentvolumeclaim "${claim}" is not bound`);
    const pv = await this.api.request('GET', `/api/v1/persistentvolumes/${name}`);
    if (pv.code !== 200) throw new MountError(`persistentvolume "${name}" not found`);
    const spec = pv.body.spec ?? {};
    if (spec.csi) {
      const dir = join(PODS, pod.metadata.uid, 'volumes', 'kubernetes.io~csi', name);
      mkdirSync(join(dir, 'mount'), { recursive: true });
      writeFileSync(join(dir, 'vol_data.json'), JSON.stringify({ driverName: spec.csi.driver, nodeName: pod.spec.nodeName, specVolID: name, volumeHandle: spec.csi.volumeHandle, volumeLifecycleMode: 'Persistent' }));
      return join(dir, 'mount');
    }
    if (spec.hostPath) return hostPathReady(spec.hostPath);
    const path = spec.local?.path as string | undefined;
    if (!path) throw new MountError(`persistentvolume "${name}": only hostPath, local and CSI volumes mount in the sandbox`);
    if (!existsSync(path)) throw new MountError(`persistentvolume "${name}": ${path} does not exist on this node`);
    // The local plugin applies fsGroup (hostPath does not: the admin's export keeps its own permissions).
    if (spec.local && fsGroup !== undefined) applyFsGroup(path, fsGroup, false);
    return path;
  }
}

/**
 * The kubelet stand-in's pod worker: pods run through containerd's CRI, as the
 * kubelet runs them (kuberuntime's generatePodSandboxConfig / generateContainerConfig,
 * Kubernetes 1.32): its metadata, labels and annotations, the pod's log directory,
 * the pod-level cgroup under the QoS tree of its cgroup driver, hostPorts as port
 * mappings (the CNI's portmap makes the rules), the pod network made by the CNI
 * plugins containerd calls. Stopping a pod is StopPodSandbox (the CNI DEL frees its
 * IP, veth, netns and rules) then RemovePodSandbox, then what the kubelet itself
 * owns: the pod's volumes and dir, and its cgroup.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTAINERD_SOCKET, CriClient, unixDial, type Container, type ContainerConfig, type PodSandboxConfig } from 'decom/cri';
import { run } from 'decom/run';
import { parseMountinfo } from 'decom/parse';
import { hierarchies } from './node.js';
import { CGROUP_ROOT } from './layout.js';

/** The kubelet's pod dirs: volumes, containers' files and plugins' state, by pod UID. */
export const PODS = '/var/lib/kubelet/pods';

export type CgroupDriver = 'cgroupfs' | 'systemd';
export type Qos = 'guaranteed' | 'burstable' | 'besteffort';

/** The securityContext fields the kubelet passes to the runtime (pod level, a container's overriding). */
export interface SecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  privileged?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type: 'RuntimeDefault' | 'Unconfined' | 'Localhost'; localhostProfile?: string };
}

export interface PodToRun {
  uid: string;
  name: string;
  namespace: string;
  hostNetwork?: boolean;
  hostPID?: boolean;
  qos?: Qos;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  securityContext?: SecurityContext & { supplementalGroups?: number[]; fsGroup?: number };
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  containers: {
    name: string;
    image: string;
    command?: string[];
    args?: string[];
    workingDir?: string;
    /** Resolved values; `podIP` ones are filled once the sandbox has its address. */
    env?: { name: string; value?: string; podIP?: boolean }[];
    ports?: { containerPort: number; hostPort?: number; protocol?: string }[];
    volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; subPath?: string; mountPropagation?: 'None' | 'HostToContainer' | 'Bidirectional' }[];
    securityContext?: SecurityContext;
  }[];
  /** A volume made ready by the volume manager (hostPath), or an emptyDir made here (the scenarios' pods). */
  volumes?: { name: string; hostPath?: string; readOnly?: boolean; emptyDir?: { medium?: string } }[];
}

/** Newest attempt last: a pod's sandboxes, or the containers of one name. */
export const byAttempt = <T extends { metadata?: { attempt: number } }>(xs: T[]): T[] => xs.sort((a, b) => (a.metadata?.attempt ?? 0) - (b.metadata?.attempt ?? 0));

const PROPAGATION = { None: 'PROPAGATION_PRIVATE', HostToContainer: 'PROPAGATION_HOST_TO_CONTAINER', Bidirectional: 'PROPAGATION_BIDIRECTIONAL' } as const;

/** A pod's container can be refused before it is created, as the kubelet's verifyRunAsNonRoot does. */
export class ContainerConfigError extends Error {}

export interface Started {
  sandboxId: string;
  containerIds: string[];
  /** The pod's IP on the pod network; undefined on the host network. */
  podIP?: string;
  /** The network namespace containerd made for it (/var/run/netns/cni-…). */
  netns?: string;
}

/** The kubelet's KubeletConfiguration value, as kubeadm writes it to /var/lib/kubelet/config.yaml. */
export function configValue(key: string, fallback: string): string {
  try {
    return new RegExp(`^${key}:\\s*(\\S+)\\s*$`, 'm').exec(readFileSync('/var/lib/kubelet/config.yaml', 'utf8'))?.[1] ?? fallback;
  } catch {
    return fallback;
  }
}

/**
 * A transient slice, as the kubelet's cgroup manager (libcontainer's systemd driver)
 * starts its QoS and pod slices over D-Bus: it stays, active, until it is stopped.
 */
async function transientSlice(name: string): Promise<void> {
  const r = await run('busctl', ['call', 'org.freedesktop.systemd1', '/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'StartTransientUnit', 'ssa(sv)a(sa(sv))',
    name, 'replace', '2', 'Description', 's', `libcontainer container ${name}`, 'DefaultDependencies', 'b', 'false', '0']);
  // Already there (the kubelet restarted) is fine: systemd says the unit exists.
  if (r.code !== 0 && !/already exists|already loaded/.test(r.stderr)) throw new Error(`starting ${name}: ${r.stderr.trim()}`);
}

/** Mount targets below `dir` (or at it), deepest first. */
function mountsBelow(dir: string, orAt = false): string[] {
  return parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'))
    .map((m) => m.target)
    .filter((t) => t.startsWith(`${dir}/`) || (orAt && t === dir))
    .sort((a, b) => b.length - a.length);
}

/** A tmpfs at `dir`, unless one is there already (a kubelet that started again): memory emptyDirs, secrets, projected volumes. */
export async function tmpfsAt(dir: string, options: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  if (mountsBelow(dir, true).includes(dir)) return;
  const r = await run('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir]);
  if (r.code !== 0) throw new Error(`mounting tmpfs at ${dir}: ${r.stderr.trim()}`);
}

export class PodRuntime {
  private constructor(
    readonly cri: CriClient,
    readonly driver: CgroupDriver,
  ) {}

  /**
   * The runtime where the kubelet's config says (containerRuntimeEndpoint, a unix:// URL;
   * containerd's default socket when it says nothing), as the real kubelet dials it.
   */
  static async connect(driver: CgroupDriver = configValue('cgroupDriver', 'cgroupfs') as CgroupDriver): Promise<PodRuntime> {
    const socket = configValue('containerRuntimeEndpoint', `unix://${CONTAINERD_SOCKET}`).replace(/^unix:\/\//, '');
    return new PodRuntime(await CriClient.connect(unixDial(socket)), driver);
  }

  close(): Promise<void> {
    return this.cri.close();
  }

  /** The pod's cgroup parent as the kubelet's pod container manager names it. */
  cgroupParent(pod: Pick<PodToRun, 'uid' | 'qos'>): string {
    const qos = pod.qos ?? 'besteffort';
    if (this.driver === 'systemd') {
      const leaf = `pod${pod.uid.replaceAll('-', '_')}`;
      return qos === 'guaranteed'
        ? `/kubepods.slice/kubepods-${leaf}.slice`
        : `/kubepods.slice/kubepods-${qos}.slice/kubepods-${qos}-${leaf}.slice`;
    }
    return qos === 'guaranteed' ? `/kubepods/pod${pod.uid}` : `/kubepods/${qos}/pod${pod.uid}`;
  }

  /**
   * The QoS tree the kubelet makes when it starts (kubepods, besteffort, burstable):
   * cgroup dirs in every hierarchy (cpuset's filled from its parent, or no process
   * could join it), or systemd slices.
   */
  async ensureQosTree(): Promise<void> {
    if (this.driver === 'systemd') {
      for (const slice of ['kubepods.slice', 'kubepods-besteffort.slice', 'kubepods-burstable.slice']) await transientSlice(slice);
      return;
    }
    for (const h of hierarchies().map((n) => join(CGROUP_ROOT, n))) {
      for (const rel of ['kubepods', 'kubepods/besteffort', 'kubepods/burstable']) {
        const dir = join(h, rel);
        if (existsSync(dir)) continue;
        mkdirSync(dir);
        if (h.endsWith('/cpuset')) {
          for (const f of ['cpuset.cpus', 'cpuset.mems']) writeFileSync(join(dir, f), readFileSync(join(dir, '..', f)));
        }
      }
    }
  }

  /** The sandboxes containerd holds for a pod, newest attempt last. */
  async sandboxesOf(uid: string) {
    return byAttempt(await this.cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': uid } }));
  }

  /**
   * The containers of a sandbox that ended and that the pod's restartPolicy runs again
   * (Always, the default; OnFailure only after a failure; Never not), each with its
   * attempts, newest last.
   */
  async toRestart(sandboxId: string, names: string[], policy: PodToRun['restartPolicy']): Promise<{ name: string; attempts: Container[] }[]> {
    if (policy === 'Never') return [];
    const containers = await this.cri.listContainers({ podSandboxId: sandboxId });
    const out: { name: string; attempts: Container[] }[] = [];
    for (const name of names) {
      const attempts = byAttempt(containers.filter((x) => x.metadata?.name === name));
      const last = attempts[attempts.length - 1];
      if (last && (last.state === 'CONTAINER_RUNNING' || last.state === 'CONTAINER_CREATED')) continue;
      if (last && policy === 'OnFailure' && (await this.cri.containerStatus(last.id)).status.exitCode === 0) continue;
      out.push({ name, attempts });
    }
    return out;
  }

  private sandboxConfig(pod: PodToRun, attempt: number): PodSandboxConfig {
    const network = pod.hostNetwork ? 'NODE' : 'POD';
    return {
      metadata: { name: pod.name, uid: pod.uid, namespace: pod.namespace, attempt },
      // A host-network pod gets no hostname: runc refuses one without a UTS namespace of its own.
      ...(pod.hostNetwork ? {} : { hostname: pod.name }),
      logDirectory: `/var/log/pods/${pod.namespace}_${pod.name}_${pod.uid}`,
      portMappings: pod.containers.flatMap((c) =>
        (c.ports ?? []).filter((p) => p.hostPort).map((p) => ({ protocol: (p.protocol ?? 'TCP') as 'TCP', containerPort: p.containerPort, hostPort: p.hostPort as number, hostIp: '' })),
      ),
      labels: { ...pod.labels, 'io.kubernetes.pod.name': pod.name, 'io.kubernetes.pod.namespace': pod.namespace, 'io.kubernetes.pod.uid': pod.uid },
      annotations: { ...pod.annotations },
      linux: {
        cgroupParent: this.cgroupParent(pod),
        securityContext: {
          namespaceOptions: { network, pid: pod.hostPID ? 'NODE' : 'CONTAINER', ipc: pod.hostNetwork ? 'NODE' : 'POD' },
          ...(pod.securityContext?.runAsUser !== undefined ? { runAsUser: { value: pod.securityContext.runAsUser } } : {}),
          ...(pod.securityContext?.runAsGroup !== undefined ? { runAsGroup: { value: pod.securityContext.runAsGroup } } : {}),
          supplementalGroups: [...(pod.securityContext?.supplementalGroups ?? []), ...(pod.securityContext?.fsGroup !== undefined ? [pod.securityContext.fsGroup] : [])],
          ...(pod.securityContext?.seccompProfile ? { seccomp: { profileType: pod.securityContext.seccompProfile.type, ...(pod.securityContext.seccompProfile.localhostProfile ? { localhostRef: pod.securityContext.seccompProfile.localhostProfile } : {}) } } : {}),
        },
      },
    };
  }

  private containerConfig(pod: PodToRun, c: PodToRun['containers'][number], attempt: number, sandbox: PodSandboxConfig, podIP: string): ContainerConfig {
    const dir = `${PODS}/${pod.uid}`;
    const mounts = (c.volumeMounts ?? []).map((m) => {
      const v = pod.volumes?.find((x) => x.name === m.name);
      const base = v?.hostPath ?? `${dir}/volumes/kubernetes.io~empty-dir/${m.name}`;
      const hostPath = m.subPath ? join(base, m.subPath) : base;
      if (m.subPath) mkdirSync(hostPath, { recursive: true }); // as the kubelet makes a missing subPath
      return { containerPath: m.mountPath, hostPath, readonly: Boolean(m.readOnly || v?.readOnly), propagation: PROPAGATION[m.mountPropagation ?? 'None'] };
    });
    const ps = pod.securityContext ?? {};
    const sc = this.effective(pod, c);
    const seccomp = sc.seccompProfile ? { profileType: sc.seccompProfile.type, ...(sc.seccompProfile.localhostProfile ? { localhostRef: sc.seccompProfile.localhostProfile } : {}) } : { profileType: 'Unconfined' as const };
    return {
      metadata: { name: c.name, attempt },
      image: { image: c.image },
      command: c.command ?? [],
      args: c.args ?? [],
      ...(c.workingDir ? { workingDir: c.workingDir } : {}),
      envs: (c.env ?? []).map((e) => ({ key: e.name, value: e.podIP ? podIP : (e.value ?? '') })),
      mounts,
      labels: { 'io.kubernetes.container.name': c.name, 'io.kubernetes.pod.name': pod.name, 'io.kubernetes.pod.namespace': pod.namespace, 'io.kubernetes.pod.uid': pod.uid },
      annotations: {
        'io.kubernetes.container.restartCount': String(attempt),
        'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
        'io.kubernetes.container.terminationMessagePolicy': 'File',
        'io.kubernetes.pod.terminationGracePeriod': '30',
        ...(c.ports?.length ? { 'io.kubernetes.container.ports': JSON.stringify(c.ports.map((p) => ({ ...p, protocol: p.protocol ?? 'TCP' }))) } : {}),
      },
      logPath: `${c.name}/${attempt}.log`,
      linux: {
        securityContext: {
          namespaceOptions: sandbox.linux?.securityContext?.namespaceOptions ?? {},
          ...(sc.runAsUser !== undefined ? { runAsUser: { value: sc.runAsUser } } : {}),
          ...(sc.runAsGroup !== undefined ? { runAsGroup: { value: sc.runAsGroup } } : {}),
          // fsGroup joins the supplemental groups, so the process can use the volumes it owns.
          supplementalGroups: [...(ps.supplementalGroups ?? []), ...(ps.fsGroup !== undefined ? [ps.fsGroup] : [])],
          readonlyRootfs: Boolean(sc.readOnlyRootFilesystem),
          privileged: Boolean(sc.privileged),
          noNewPrivs: sc.allowPrivilegeEscalation === false,
          ...(sc.capabilities ? { capabilities: { addCapabilities: sc.capabilities.add ?? [], dropCapabilities: sc.capabilities.drop ?? [] } } : {}),
          seccomp,
        },
      },
    };
  }

  /** The container's securityContext over the pod's (determineEffectiveSecurityContext). */
  private effective(pod: PodToRun, c: PodToRun['containers'][number]): SecurityContext {
    return { ...pod.securityContext, ...c.securityContext };
  }

  /**
   * What the kubelet refuses before it makes the sandbox (CreateContainerConfigError):
   * a mount of no volume, a root user under runAsNonRoot (the image's user is not
   * read: only runAsUser is judged).
   */
  check(pod: PodToRun): void {
    for (const c of pod.containers) {
      for (const m of c.volumeMounts ?? []) {
        if (!pod.volumes?.some((v) => v.name === m.name)) throw new ContainerConfigError(`container ${c.name}: volumeMount "${m.name}" names no volume of the pod`);
      }
      const sc = this.effective(pod, c);
      if (sc.runAsNonRoot && sc.runAsUser === 0) throw new ContainerConfigError(`container ${c.name}: container's runAsUser breaks non-root policy`);
    }
  }

  /** The pod dir and its volumes, as the kubelet's volume manager lays them out before the sandbox. */
  private volumes(pod: PodToRun): void {
    const dir = `${PODS}/${pod.uid}`;
    for (const c of pod.containers) mkdirSync(`${dir}/containers/${c.name}`, { recursive: true });
    mkdirSync(`${dir}/plugins`, { recursive: true });
    for (const v of pod.volumes ?? []) {
      if (!v.emptyDir || v.hostPath) continue;
      const path = `${dir}/volumes/kubernetes.io~empty-dir/${v.name}`;
      mkdirSync(path, { recursive: true });
    }
  }

  private async mountMemoryVolumes(pod: PodToRun): Promise<void> {
    for (const v of pod.volumes ?? []) {
      if (v.emptyDir?.medium !== 'Memory' || v.hostPath) continue;
      const path = `${PODS}/${pod.uid}/volumes/kubernetes.io~empty-dir/${v.name}`;
      await tmpfsAt(path, 'size=16m');
    }
  }

  /** Runs a pod: its volumes, a new sandbox (attempt after the last one), its containers. */
  async start(pod: PodToRun): Promise<Started> {
    this.check(pod);
    const before = await this.sandboxesOf(pod.uid);
    for (const s of before) await this.removeSandbox(s.id);
    const attempt = before.length ? (before[before.length - 1]?.metadata?.attempt ?? 0) + 1 : 0;
    this.volumes(pod);
    await this.mountMemoryVolumes(pod);
    const config = this.sandboxConfig(pod, attempt);
    // The pod-level cgroup is the kubelet's, made before the sandbox (the runtime makes the containers' below it).
    const parent = config.linux?.cgroupParent ?? '';
    if (this.driver === 'systemd') await transientSlice(parent.slice(parent.lastIndexOf('/') + 1));
    const sandboxId = await this.cri.runPodSandbox(config);
    const { status, info } = await this.cri.podSandboxStatus(sandboxId, true);
    const containerIds: string[] = [];
    for (const c of pod.containers) containerIds.push(await this.startContainer(sandboxId, pod, c, 0, config, status.network?.ip ?? ''));
    // The pod's netns, from the runtime spec containerd reports (verbose status).
    const netns = /"type":"network","path":"([^"]+)"/.exec(info.info ?? '')?.[1];
    return { sandboxId, containerIds, ...(status.network?.ip ? { podIP: status.network.ip } : {}), ...(netns && !pod.hostNetwork ? { netns } : {}) };
  }

  private async startContainer(sandboxId: string, pod: PodToRun, c: PodToRun['containers'][number], attempt: number, config: PodSandboxConfig, podIP: string): Promise<string> {
    const id = await this.cri.createContainer(sandboxId, this.containerConfig(pod, c, attempt, config, podIP), config);
    await this.cri.startContainer(id);
    return id;
  }

  /**
   * Keeps a running pod running, as the kubelet's sync loop does: a sandbox that is
   * not ready is replaced (a new attempt, its containers with it); a container that
   * exited is started again as the next attempt when the pod's restartPolicy says so
   * (Always, the default; OnFailure for a non-zero exit). Says what it did, or nothing.
   */
  async sync(pod: PodToRun): Promise<string | undefined> {
    const sandboxes = await this.sandboxesOf(pod.uid);
    const ready = sandboxes.filter((s) => s.state === 'SANDBOX_READY').pop();
    if (!ready) {
      await this.start(pod);
      return sandboxes.length ? `sandbox of ${pod.namespace}/${pod.name} was not ready: started it again` : `started ${pod.namespace}/${pod.name}`;
    }
    const restarted: string[] = [];
    for (const { name, attempts } of await this.toRestart(ready.id, pod.containers.map((c) => c.name), pod.restartPolicy)) {
      const c = pod.containers.find((x) => x.name === name) as PodToRun['containers'][number];
      const last = attempts[attempts.length - 1];
      // The kubelet keeps the last dead container for its logs; the one before goes.
      for (const old of attempts.slice(0, -1)) await this.cri.removeContainer(old.id).catch(() => {});
      const config = this.sandboxConfig(pod, ready.metadata?.attempt ?? 0);
      const ip = (await this.cri.podSandboxStatus(ready.id)).status.network?.ip ?? '';
      await this.startContainer(ready.id, pod, c, last ? (last.metadata?.attempt ?? 0) + 1 : 0, config, ip);
      restarted.push(name);
    }
    return restarted.length ? `restarted ${restarted.join(', ')} of ${pod.namespace}/${pod.name}` : undefined;
  }

  private async removeSandbox(id: string): Promise<void> {
    // StopPodSandbox runs the CNI DEL; RemovePodSandbox takes its containers with it.
    await this.cri.stopPodSandbox(id);
    await this.cri.removePodSandbox(id);
  }

  /** A finished pod's volumes unmounted (the kubelet tears them down once its containers ended); its dir stays until it is deleted. */
  async releaseVolumes(uid: string): Promise<void> {
    for (const m of mountsBelow(`${PODS}/${uid}/volumes`)) await run('umount', [m]);
  }

  /** Stops a pod and removes what the kubelet made for it: sandboxes, volumes, pod dir, pod cgroup. */
  async stop(uid: string, qos: Qos = 'besteffort'): Promise<void> {
    for (const s of await this.sandboxesOf(uid)) await this.removeSandbox(s.id);
    const dir = `${PODS}/${uid}`;
    for (const m of mountsBelow(dir)) {
      const r = await run('umount', [m]);
      if (r.code !== 0) process.stdout.write(`kubelet-standin: unmounting ${m}: ${r.stderr.trim()}\n`);
    }
    // Never a delete through a volume that would not unmount.
    if (!mountsBelow(dir).length) rmSync(dir, { recursive: true, force: true });
    await this.removePodCgroup(uid, qos);
  }

  /** The pod-level cgroup, once its containers are gone: through systemd for the systemd driver. */
  private async removePodCgroup(uid: string, qos: Qos): Promise<void> {
    const parent = this.cgroupParent({ uid, qos });
    if (this.driver === 'systemd') {
      await run('systemctl', ['stop', parent.slice(parent.lastIndexOf('/') + 1)]);
    }
    for (const h of hierarchies().map((n) => join(CGROUP_ROOT, n))) {
      try {
        rmdirSync(join(h, parent)); // a cgroup goes with rmdir only, and only once empty
      } catch {
        /* gone already, or not in this hierarchy */
      }
    }
  }
}

/** The stand-in's one runtime client; containerd's restarts drop it, and the next call makes another. */
let shared: PodRuntime | undefined;
export async function getRuntime(): Promise<PodRuntime> {
  if (!shared) {
    shared = await PodRuntime.connect();
    await shared.ensureQosTree();
  }
  return shared;
}
export function dropRuntime(): void {
  void shared?.close().catch(() => {});
  shared = undefined;
}

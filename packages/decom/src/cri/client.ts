// A Container Runtime Interface client: the RuntimeService calls the kubelet makes to stop
// and remove pods, so that the runtime does its own teardown (StopPodSandbox runs the CNI
// DEL that frees the pod's netns, veth, IPAM lease and chains).
//
// gRPC is spoken by hand over node:http2 because decom reaches a node's runtime socket
// through a byte stream it already has (an SSH channel to /run/containerd/containerd.sock);
// @grpc/grpc-js only dials addresses itself. Unary calls need little: a 5-byte frame
// prefix, four request headers, and the status from the trailers.
import { CONTAINERD_DEFAULTS } from './containerd-config.js';
import http2 from 'node:http2';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import protobuf from 'protobufjs';

export type Dial = () => Duplex | Promise<Duplex>;
export type ApiVersion = 'v1' | 'v1alpha2';

/** A runtime's local socket, for callers on the node itself (the sandbox's kubelet stand-in). */
export const unixDial = (path: string): Dial => () => net.connect(path);

/** Where containerd serves its API and its CRI plugin when its config does not move it. */
export const CONTAINERD_SOCKET = CONTAINERD_DEFAULTS.address;

// --- the messages, camelCase as protobufjs converts them; enums by name -------------------

export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';
export type Protocol = 'TCP' | 'UDP' | 'SCTP';
export type MountPropagation = 'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';
export type PodSandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
export type ContainerState = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';
type Labels = Record<string, string>;

export interface NamespaceOption { network?: NamespaceMode; pid?: NamespaceMode; ipc?: NamespaceMode; targetId?: string }
export interface Int64Value { value: number }
export interface PodSandboxMetadata { name: string; uid: string; namespace: string; attempt: number }
export interface DNSConfig { servers?: string[]; searches?: string[]; options?: string[] }
export interface PortMapping { protocol?: Protocol; containerPort?: number; hostPort?: number; hostIp?: string }
export interface LinuxSandboxSecurityContext {
  namespaceOptions?: NamespaceOption;
  runAsUser?: Int64Value;
  runAsGroup?: Int64Value;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  privileged?: boolean;
  seccomp?: SecurityProfile;
}
/** A seccomp profile: the runtime's default, none, or a file on the node. */
export interface SecurityProfile { profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost'; localhostRef?: string }
export interface LinuxPodSandboxConfig { cgroupParent?: string; securityContext?: LinuxSandboxSecurityContext; sysctls?: Labels }
export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  /** Leave empty for a hostNetwork pod: runc refuses a hostname without a UTS namespace of its own. */
  hostname?: string;
  logDirectory?: string;
  dnsConfig?: DNSConfig;
  portMappings?: PortMapping[];
  labels?: Labels;
  annotations?: Labels;
  linux?: LinuxPodSandboxConfig;
}
export interface Mount { containerPath: string; hostPath: string; readonly?: boolean; selinuxRelabel?: boolean; propagation?: MountPropagation }
export interface KeyValue { key: string; value: string }
export interface ImageSpec { image: string }
export interface ContainerMetadata { name: string; attempt: number }
export interface LinuxContainerSecurityContext {
  capabilities?: { addCapabilities?: string[]; dropCapabilities?: string[] };
  privileged?: boolean;
  namespaceOptions?: NamespaceOption;
  runAsUser?: Int64Value;
  runAsGroup?: Int64Value;
  runAsUsername?: string;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  noNewPrivs?: boolean;
  seccomp?: SecurityProfile;
}
export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: ImageSpec;
  command?: string[];
  args?: string[];
  workingDir?: string;
  envs?: KeyValue[];
  mounts?: Mount[];
  labels?: Labels;
  annotations?: Labels;
  /** Relative to the sandbox's logDirectory. */
  logPath?: string;
  linux?: { securityContext?: LinuxContainerSecurityContext };
}

// Replies: scalars, lists and maps are always present (zero values included); a
// sub-message the runtime did not send is absent. Timestamps are Unix nanoseconds as
// numbers, exact to about 0.25 µs, which is plenty for ordering and ages.
export interface PodSandbox {
  id: string;
  metadata?: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: number;
  labels: Labels;
  annotations: Labels;
  runtimeHandler: string;
}
export interface PodSandboxStatus {
  id: string;
  metadata?: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: number;
  network?: { ip: string; additionalIps: { ip: string }[] };
  linux?: { namespaces?: { options?: NamespaceOption } };
  labels: Labels;
  annotations: Labels;
  runtimeHandler: string;
}
export interface Container {
  id: string;
  podSandboxId: string;
  metadata?: ContainerMetadata;
  image?: ImageSpec;
  imageRef: string;
  state: ContainerState;
  createdAt: number;
  labels: Labels;
  annotations: Labels;
}
export interface ContainerStatus {
  id: string;
  metadata?: ContainerMetadata;
  state: ContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  image?: ImageSpec;
  imageRef: string;
  reason: string;
  message: string;
  labels: Labels;
  annotations: Labels;
  mounts: Mount[];
  logPath: string;
}
export interface PodSandboxFilter { id?: string; state?: { state: PodSandboxState }; labelSelector?: Labels }
export interface ContainerFilter { id?: string; state?: { state: ContainerState }; podSandboxId?: string; labelSelector?: Labels }

// --- errors --------------------------------------------------------------------------------

/** gRPC status codes, named as grpc-go prints them (what a runtime's own logs say). */
const CODE_NAMES = [
  'OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists',
  'PermissionDenied', 'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange',
  'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated',
];
export const GrpcCode = { DeadlineExceeded: 4, NotFound: 5, Unimplemented: 12, Internal: 13, Unavailable: 14 } as const;

/** A failed call: the runtime's gRPC status, or one this client assigns to a transport failure (Unavailable, DeadlineExceeded). */
export class CriError extends Error {
  override readonly name = 'CriError';
  constructor(
    readonly method: string,
    readonly code: number,
    readonly detail: string,
  ) {
    // One line: runtimes' messages can carry runc's multi-line stderr.
    super(`CRI ${method}: ${CODE_NAMES[code] ?? `code ${code}`}: ${detail.trim().replace(/\s*\n\s*/g, ' | ')}`);
  }
}

export const isNotFound = (e: unknown): boolean => e instanceof CriError && e.code === GrpcCode.NotFound;

// --- codec ---------------------------------------------------------------------------------

// The .proto stays a file of its own (copied into dist/ by scripts/copy-assets.mjs) so it
// can be diffed against upstream api.proto and read by protoc-based tools.
const roots = new Map<ApiVersion, protobuf.Root>();

/** The parsed subset, under package runtime.<version>. */
export function loadCriProto(version: ApiVersion): protobuf.Root {
  let root = roots.get(version);
  if (!root) {
    const text = readFileSync(new URL('./runtime.proto', import.meta.url), 'utf8');
    root = protobuf.parse(text.replace(/^package runtime\.v1;$/m, `package runtime.${version};`), { keepCase: false }).root;
    roots.set(version, root);
  }
  return root;
}

const TO_OBJECT: protobuf.IConversionOptions = { enums: String, longs: Number, defaults: true };

/** toObject's defaults turn absent sub-messages into null; absent reads better in TypeScript. */
const dropNulls = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(dropNulls);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = dropNulls(x);
  return out;
};

/** One gRPC length-prefixed message: flag 0 (not compressed), uint32 BE length, bytes. */
export function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** The messages of a response body. Throws on a truncated or compressed one (we never offer grpc-accept-encoding). */
export function unframe(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  while (at < body.length) {
    if (body.length - at < 5) throw new Error(`truncated frame header (${body.length - at} bytes)`);
    if (body[at] !== 0) throw new Error(`compressed message (flag ${body[at]}) though no compression was offered`);
    const len = body.readUInt32BE(at + 1);
    if (body.length - at - 5 < len) throw new Error(`truncated message: ${body.length - at - 5} of ${len} bytes`);
    out.push(body.subarray(at + 5, at + 5 + len));
    at += 5 + len;
  }
  return out;
}

/** grpc-message is percent-encoded UTF-8; a runtime that sends it raw still gets read. */
const decodeMessage = (raw: unknown): string => {
  const s = Array.isArray(raw) ? raw.join(', ') : typeof raw === 'string' ? raw : '';
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/** The gRPC spec's mapping for a reply that is not gRPC at all (a proxy's error page). */
const codeOfHttpStatus = (status: number): number =>
  status === 400 ? 13 : status === 401 ? 16 : status === 403 ? 7 : status === 404 ? 12 : [429, 502, 503, 504].includes(status) ? 14 : 2;

const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

// --- transport -----------------------------------------------------------------------------

/** One HTTP/2 session over the caller's byte stream; every failure of it is kept to explain the calls it breaks. */
class Channel {
  private readonly session: http2.ClientHttp2Session;
  private failure: string | undefined;

  constructor(private readonly transport: Duplex) {
    this.session = http2.connect('http://localhost', { createConnection: () => transport });
    // Without these listeners a node that drops the connection would crash decom with an
    // unhandled 'error'; instead the session ends and its calls fail with the reason.
    this.session.on('error', (e) => (this.failure ??= errText(e)));
    this.session.on('goaway', (code) => (this.failure ??= `the runtime closed the connection (GOAWAY ${code})`));
    transport.on('error', (e) => {
      this.failure ??= errText(e);
      this.session.destroy();
    });
    transport.on('close', () => {
      this.failure ??= 'connection to the runtime closed';
      this.session.destroy();
    });
  }

  unary(version: ApiVersion, method: string, request: object, timeoutMs: number): Promise<Record<string, unknown>> {
    const root = loadCriProto(version);
    const reqType = root.lookupType(`runtime.${version}.${method}Request`);
    const resType = root.lookupType(`runtime.${version}.${method}Response`);
    const fail = (code: number, detail: string) => new CriError(method, code, detail);
    let body: Buffer;
    try {
      body = frame(reqType.encode(reqType.fromObject(request)).finish());
    } catch (e) {
      return Promise.reject(fail(GrpcCode.Internal, `encoding the request: ${errText(e)}`));
    }
    return new Promise((resolve, reject) => {
      let stream: http2.ClientHttp2Stream | undefined;
      let headers: http2.IncomingHttpHeaders | undefined;
      let trailers: http2.IncomingHttpHeaders | undefined;
      const chunks: Buffer[] = [];
      let done = false;
      const settle = (err: CriError | undefined, value?: Record<string, unknown>) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (err) {
          if (stream && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
          reject(err);
        } else resolve(value!);
      };
      const timer = setTimeout(() => settle(fail(GrpcCode.DeadlineExceeded, `no answer within ${timeoutMs} ms`)), timeoutMs);
      const lost = (e?: unknown) => fail(GrpcCode.Unavailable, this.failure ?? (e === undefined ? 'connection to the runtime closed' : errText(e)));

      try {
        stream = this.session.request({
          ':method': 'POST',
          ':path': `/runtime.${version}.RuntimeService/${method}`,
          'content-type': 'application/grpc',
          te: 'trailers',
          // The runtime abandons the work too once the caller has given up.
          'grpc-timeout': `${Math.min(Math.ceil(timeoutMs), 99_999_999)}m`,
        });
      } catch (e) {
        settle(lost(e));
        return;
      }
      stream.on('response', (h) => (headers = h));
      stream.on('trailers', (t) => (trailers = t));
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', (e) => settle(lost(e)));
      stream.on('close', () => {
        if (done) return;
        if (!headers) return settle(lost());
        // A trailers-only response (how grpc-go reports most errors) carries the status in its headers.
        const status = trailers?.['grpc-status'] ?? headers['grpc-status'];
        if (status === undefined) {
          const http = Number(headers[':status']);
          if (http !== 200) return settle(fail(codeOfHttpStatus(http), `HTTP ${http} without a gRPC status`));
          return settle(trailers ? fail(GrpcCode.Internal, 'no grpc-status in the trailers') : lost());
        }
        const code = Number(status);
        if (code !== 0) {
          const message = decodeMessage(trailers?.['grpc-message'] ?? headers['grpc-message']);
          return settle(fail(code, message || '(no message)'));
        }
        try {
          const [msg] = unframe(Buffer.concat(chunks));
          if (!msg) return settle(fail(GrpcCode.Internal, 'status OK but no response message'));
          settle(undefined, dropNulls(resType.toObject(resType.decode(msg), TO_OBJECT)) as Record<string, unknown>);
        } catch (e) {
          settle(fail(GrpcCode.Internal, `malformed response: ${errText(e)}`));
        }
      });
      stream.end(body);
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      const finish = () => {
        this.transport.destroy();
        resolve();
      };
      if (this.session.destroyed) return finish();
      this.session.once('close', finish);
      if (!this.session.closed) this.session.close();
      // A peer that never answers the GOAWAY must not hold decom up.
      setTimeout(() => this.session.destroy(), 2_000).unref();
    });
  }
}

// --- the client ----------------------------------------------------------------------------

/** What the kubelet sends in VersionRequest.version (kubeRuntimeAPIVersion). */
const KUBELET_RUNTIME_API = '0.1.0';

export class CriClient {
  private constructor(
    private readonly channel: Channel,
    readonly apiVersion: ApiVersion,
    readonly runtime: { name: string; version: string; apiVersion: string },
    private readonly timeoutMs: number,
  ) {}

  /**
   * Dials, then asks Version on runtime.v1; a runtime without it (Unimplemented) is asked
   * on runtime.v1alpha2, as the kubelet does. `version` forces one. `timeoutMs` is every
   * call's deadline (default 30 s); stopContainer adds its grace period to it.
   */
  static async connect(dial: Dial, opts: { version?: ApiVersion; timeoutMs?: number } = {}): Promise<CriClient> {
    const timeoutMs = opts.timeoutMs ?? 30_000;
    let transport: Duplex;
    try {
      transport = await dial();
    } catch (e) {
      throw new CriError('Version', GrpcCode.Unavailable, `cannot reach the runtime: ${errText(e)}`);
    }
    const channel = new Channel(transport);
    const ask = (v: ApiVersion) => channel.unary(v, 'Version', { version: KUBELET_RUNTIME_API }, timeoutMs);
    try {
      let apiVersion: ApiVersion = opts.version ?? 'v1';
      let res: Record<string, unknown>;
      try {
        res = await ask(apiVersion);
      } catch (e) {
        if (opts.version || !(e instanceof CriError) || e.code !== GrpcCode.Unimplemented) throw e;
        apiVersion = 'v1alpha2';
        res = await ask(apiVersion);
      }
      const runtime = { name: String(res.runtimeName), version: String(res.runtimeVersion), apiVersion: String(res.runtimeApiVersion) };
      return new CriClient(channel, apiVersion, runtime, timeoutMs);
    } catch (e) {
      await channel.close();
      throw e;
    }
  }

  private call(method: string, request: object, timeoutMs = this.timeoutMs): Promise<Record<string, unknown>> {
    return this.channel.unary(this.apiVersion, method, request, timeoutMs);
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = ''): Promise<string> {
    return String((await this.call('RunPodSandbox', { config, runtimeHandler })).podSandboxId);
  }

  /** Stops the sandbox's containers and tears its network down (CNI DEL). Idempotent in the runtime. */
  async stopPodSandbox(id: string): Promise<void> {
    await this.call('StopPodSandbox', { podSandboxId: id });
  }

  /** Removes the sandbox and its containers. containerd answers NotFound for an unknown id. */
  async removePodSandbox(id: string): Promise<void> {
    await this.call('RemovePodSandbox', { podSandboxId: id });
  }

  async podSandboxStatus(id: string, verbose = false): Promise<{ status: PodSandboxStatus; info: Labels }> {
    const res = await this.call('PodSandboxStatus', { podSandboxId: id, verbose });
    return { status: res.status as PodSandboxStatus, info: res.info as Labels };
  }

  async listPodSandbox(filter?: PodSandboxFilter): Promise<PodSandbox[]> {
    return (await this.call('ListPodSandbox', { filter })).items as PodSandbox[];
  }

  async createContainer(podSandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string> {
    return String((await this.call('CreateContainer', { podSandboxId, config, sandboxConfig })).containerId);
  }

  async startContainer(id: string): Promise<void> {
    await this.call('StartContainer', { containerId: id });
  }

  /** SIGTERM, then SIGKILL after timeoutSec; the call's deadline allows for that grace. */
  async stopContainer(id: string, timeoutSec: number): Promise<void> {
    await this.call('StopContainer', { containerId: id, timeout: timeoutSec }, timeoutSec * 1000 + this.timeoutMs);
  }

  async removeContainer(id: string): Promise<void> {
    await this.call('RemoveContainer', { containerId: id });
  }

  async listContainers(filter?: ContainerFilter): Promise<Container[]> {
    return (await this.call('ListContainers', { filter })).containers as Container[];
  }

  async containerStatus(id: string, verbose = false): Promise<{ status: ContainerStatus; info: Labels }> {
    const res = await this.call('ContainerStatus', { containerId: id, verbose });
    return { status: res.status as ContainerStatus, info: res.info as Labels };
  }

  /** Ends the session (calls in flight finish first, for at most 2 s) and the byte stream under it. */
  close(): Promise<void> {
    return this.channel.close();
  }
}

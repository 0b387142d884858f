// The CRI client (src/cri/client.ts): its gRPC codec, its calls against a tiny gRPC server of
// this file's own for the error paths (an audit phantom removed with the reset's CRI calls
// included), then against a real containerd (Debian's 1.6 with runc and the CNI plugins) in
// private namespaces, skipped, saying why, where this host cannot run it.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { accessSync, closeSync, constants, copyFileSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duplex } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CriClient,
  CriError,
  frame,
  isNotFound,
  loadCriProto,
  unframe,
  unixDial,
  type ApiVersion,
  type ContainerConfig,
  type Dial,
  type PodSandboxConfig,
} from './client.js';
import { nodeActions } from '../audit/fix.js';
import type { NodeIo } from '../engine/step.js';
import { emptyState, type NodeState } from '../probes/index.js';
import { containers as containersStep } from '../steps/pods.js';
import { tempDir } from '../../test/helpers/temp.js';

// --- without a runtime: the codec, and a tiny gRPC server of our own for the error paths ---

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const encode = (version: ApiVersion, type: string, obj: object) => {
  const t = loadCriProto(version).lookupType(`runtime.${version}.${type}`);
  return t.encode(t.fromObject(obj)).finish();
};

describe('CRI codec', () => {
  it('frames a message with flag 0 and a big-endian length, and reads back several', () => {
    const a = frame(Buffer.from('abc'));
    expect(hex(a)).toBe('0000000003616263');
    const [x, y, z] = unframe(Buffer.concat([a, frame(Buffer.alloc(0)), frame(Buffer.alloc(300, 7))]));
    expect(x?.toString()).toBe('abc');
    expect(y?.length).toBe(0);
    expect(z?.length).toBe(300);
    expect(() => unframe(a.subarray(0, 6))).toThrow(/truncated message: 1 of 3 bytes/);
    expect(() => unframe(Buffer.from([1, 0, 0, 0, 0]))).toThrow(/compressed/);
  });

  it('puts the fields at cri-api numbers, identical under runtime.v1 and runtime.v1alpha2', () => {
    const req = {
      config: { linux: { cgroupParent: '/x', securityContext: { namespaceOptions: { network: 'NODE' } } } },
      runtimeHandler: 'r',
    };
    // RunPodSandboxRequest.config=1 { PodSandboxConfig.linux=8 { cgroup_parent=1 "/x",
    // security_context=2 { namespace_options=1 { network=1 NODE(2) } } } }, runtime_handler=2 "r"
    const want = '0a0c420a0a022f7812040a020802' + '120172';
    expect(hex(encode('v1', 'RunPodSandboxRequest', req))).toBe(want);
    expect(hex(encode('v1alpha2', 'RunPodSandboxRequest', req))).toBe(want);
    // ContainerFilter: state=2 { state=1 EXITED(2) }, pod_sandbox_id=3, label_selector=4 (map entry key=1 value=2)
    expect(hex(encode('v1', 'ContainerFilter', { state: { state: 'CONTAINER_EXITED' }, podSandboxId: 'p', labelSelector: { k: 'v' } }))).toBe(
      '12020802' + '1a0170' + '22060a016b120176',
    );
    // ContainerStatus: created_at=4 (int64 varint), exit_code=7, log_path=15
    expect(hex(encode('v1', 'ContainerStatus', { createdAt: 1, exitCode: 137, logPath: 'l' }))).toBe('2001' + '388901' + '7a016c');
  });
});

type Handler = (method: string, req: Record<string, unknown>, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void;

interface FakeRuntime {
  path: string;
  dial: Dial;
  sessions: number;
  seen: { path: string; headers: http2.IncomingHttpHeaders; req: Record<string, unknown> }[];
  /** Cuts every connection, as a node that goes away does: no GOAWAY, no RST_STREAM. */
  drop(): void;
  close(): Promise<void>;
}

/** An h2c gRPC server on a unix socket; each request is decoded with the path's own package. */
async function fakeRuntime(handle: Handler): Promise<FakeRuntime> {
  const dir = tempDir('decom-cri-fake-');
  const path = join(dir, 'cri.sock');
  const server = http2.createServer();
  const fake: FakeRuntime = {
    path,
    dial: unixDial(path),
    sessions: 0,
    seen: [],
    drop: () => {
      for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        for (const s of open) s.destroy();
      }),
  };
  const open = new Set<http2.ServerHttp2Session>();
  const sockets = new Set<net.Socket>();
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('session', (s) => {
    fake.sessions++;
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => {});
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const p = String(headers[':path']);
      const m = /^\/runtime\.(v1|v1alpha2)\.RuntimeService\/(\w+)$/.exec(p);
      if (!m) return trailersOnly(stream, 12, `unknown service ${p}`);
      const version = m[1] as ApiVersion;
      const t = loadCriProto(version).lookupType(`runtime.${version}.${m[2]}Request`);
      const req = t.toObject(t.decode(unframe(Buffer.concat(chunks))[0] ?? Buffer.alloc(0)), { enums: String, longs: Number }) as Record<string, unknown>;
      fake.seen.push({ path: p, headers, req });
      handle(m[2]!, req, stream, headers);
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return fake;
}

function reply(stream: http2.ServerHttp2Stream, version: ApiVersion, type: string, obj: object): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
  stream.end(frame(encode(version, type, obj)));
}
function replyError(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(code), 'grpc-message': encodeURIComponent(message) }));
  stream.end();
}
function trailersOnly(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeURIComponent(message) }, { endStream: true });
}
const versionReply = (api: ApiVersion) => ({ version: '0.1.0', runtimeName: 'fake', runtimeVersion: '9.9', runtimeApiVersion: api });

/** A Duplex that is not a net.Socket, as an SSH channel is: bytes relayed to a socket. */
const relayDial =
  (path: string): Dial =>
  () => {
    const sock = net.connect(path);
    const d = new Duplex({
      read: () => void sock.resume(),
      write: (chunk: Buffer, _enc, cb) => void sock.write(chunk, cb),
      final: (cb) => {
        sock.end();
        cb();
      },
      destroy: (err, cb) => {
        sock.destroy();
        cb(err);
      },
    });
    sock.on('data', (b: Buffer) => {
      if (!d.push(b)) sock.pause();
    });
    sock.on('end', () => d.push(null));
    sock.on('error', (e) => d.destroy(e));
    return d;
  };

describe('CRI client against an in-process gRPC server', () => {
  let fake: FakeRuntime | undefined;
  let client: CriClient | undefined;
  afterEach(async () => {
    await client?.close();
    await fake?.close();
    client = fake = undefined;
  });

  it('asks Version on runtime.v1 with the gRPC headers, then reuses the one session', async () => {
    const created = 1_700_000_000_123_456_789;
    fake = await fakeRuntime((method, req, stream) => {
      if (method === 'Version') return reply(stream, 'v1', 'VersionResponse', versionReply('v1'));
      if (method === 'ListPodSandbox')
        return reply(stream, 'v1', 'ListPodSandboxResponse', {
          items: [{ id: 'p1', metadata: { name: 'web', uid: 'u', namespace: 'ns', attempt: 1 }, state: 'SANDBOX_NOTREADY', createdAt: created, labels: { a: 'b' } }],
        });
      replyError(stream, 12, `no ${method}`);
    });
    client = await CriClient.connect(fake.dial, { timeoutMs: 5_000 });
    expect(client.apiVersion).toBe('v1');
    expect(client.runtime).toEqual({ name: 'fake', version: '9.9', apiVersion: 'v1' });
    const pods = await client.listPodSandbox({ labelSelector: { app: 'web' }, state: { state: 'SANDBOX_READY' } });
    expect(pods).toEqual([
      {
        id: 'p1',
        metadata: { name: 'web', uid: 'u', namespace: 'ns', attempt: 1 },
        state: 'SANDBOX_NOTREADY',
        createdAt: created,
        labels: { a: 'b' },
        annotations: {},
        runtimeHandler: '',
      },
    ]);
    expect(await client.listPodSandbox()).toHaveLength(1);
    expect(fake.sessions).toBe(1);
    const [version, list] = fake.seen;
    expect(version?.path).toBe('/runtime.v1.RuntimeService/Version');
    expect(version?.req).toEqual({ version: '0.1.0' });
    expect(version?.headers).toMatchObject({ ':method': 'POST', 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': '5000m' });
    expect(list?.req).toEqual({ filter: { labelSelector: { app: 'web' }, state: { state: 'SANDBOX_READY' } } });
  });

  it('falls back to runtime.v1alpha2 when v1 is Unimplemented, and stays there', async () => {
    fake = await fakeRuntime((method, _req, stream, headers) => {
      if (String(headers[':path']).startsWith('/runtime.v1.')) return trailersOnly(stream, 12, 'unknown service runtime.v1.RuntimeService');
      if (method === 'Version') return reply(stream, 'v1alpha2', 'VersionResponse', versionReply('v1alpha2'));
      reply(stream, 'v1alpha2', 'ListContainersResponse', { containers: [{ id: 'c1', podSandboxId: 'p1', state: 'CONTAINER_RUNNING', image: { image: 'busybox' } }] });
    });
    client = await CriClient.connect(fake.dial);
    expect(client.apiVersion).toBe('v1alpha2');
    expect(client.runtime.apiVersion).toBe('v1alpha2');
    const [c] = await client.listContainers({ podSandboxId: 'p1' });
    expect(c).toMatchObject({ id: 'c1', podSandboxId: 'p1', state: 'CONTAINER_RUNNING', image: { image: 'busybox' }, labels: {} });
    expect(fake.seen.map((s) => s.path)).toEqual([
      '/runtime.v1.RuntimeService/Version',
      '/runtime.v1alpha2.RuntimeService/Version',
      '/runtime.v1alpha2.RuntimeService/ListContainers',
    ]);
  });

  it('a forced version is the only one asked; its Unimplemented is the error', async () => {
    fake = await fakeRuntime((_m, _r, stream) => trailersOnly(stream, 12, 'unknown service runtime.v1alpha2.RuntimeService'));
    const err = await CriClient.connect(fake.dial, { version: 'v1alpha2' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CriError);
    expect((err as CriError).message).toBe('CRI Version: Unimplemented: unknown service runtime.v1alpha2.RuntimeService');
    expect(fake.seen).toHaveLength(1);
  });

  it('reads grpc-status and grpc-message (percent-encoded) from trailers and from a trailers-only response', async () => {
    fake = await fakeRuntime((method, req, stream) => {
      if (method === 'Version') return reply(stream, 'v1', 'VersionResponse', versionReply('v1'));
      if (method === 'RemovePodSandbox') return replyError(stream, 5, `an error occurred when try to find sandbox "${String(req.podSandboxId)}": not found – ünïcode 100%`);
      if (method === 'ContainerStatus') return trailersOnly(stream, 5, 'an error occurred when try to find container "c9": not found');
      if (method === 'StartContainer') return replyError(stream, 2, 'failed to create shim task:\nrunc create failed: oops\n');
      stream.respond({ ':status': 503, 'content-type': 'text/plain' });
      stream.end('upstream down');
    });
    client = await CriClient.connect(fake.dial);
    const rm = await client.removePodSandbox('abc').catch((e: unknown) => e);
    expect(isNotFound(rm)).toBe(true);
    expect((rm as CriError).method).toBe('RemovePodSandbox');
    expect((rm as Error).message).toBe('CRI RemovePodSandbox: NotFound: an error occurred when try to find sandbox "abc": not found – ünïcode 100%');
    const st = await client.containerStatus('c9').catch((e: unknown) => e);
    expect(isNotFound(st)).toBe(true);
    expect((st as Error).message).toBe('CRI ContainerStatus: NotFound: an error occurred when try to find container "c9": not found');
    const start = await client.startContainer('c9').catch((e: unknown) => e);
    expect((start as CriError).code).toBe(2);
    expect((start as Error).message).toBe('CRI StartContainer: Unknown: failed to create shim task: | runc create failed: oops');
    const http = await client.stopPodSandbox('p').catch((e: unknown) => e);
    expect((http as CriError).code).toBe(14);
    expect((http as Error).message).toBe('CRI StopPodSandbox: Unavailable: HTTP 503 without a gRPC status');
    expect(isNotFound(new Error('not found'))).toBe(false);
  });

  it('gives up at the deadline, names the call, and keeps the session for the next one', async () => {
    fake = await fakeRuntime((method, _req, stream) => {
      if (method === 'Version') return reply(stream, 'v1', 'VersionResponse', versionReply('v1'));
      if (method === 'StopPodSandbox') return; // never answers
      reply(stream, 'v1', 'ListPodSandboxResponse', {});
    });
    client = await CriClient.connect(fake.dial, { timeoutMs: 300 });
    const t0 = Date.now();
    const err = await client.stopPodSandbox('p1').catch((e: unknown) => e);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect((err as CriError).code).toBe(4);
    expect((err as Error).message).toBe('CRI StopPodSandbox: DeadlineExceeded: no answer within 300 ms');
    expect(fake.seen.at(-1)?.headers['grpc-timeout']).toBe('300m');
    expect(await client.listPodSandbox()).toEqual([]);
    expect(fake.sessions).toBe(1);
  });

  it('a connection dropped mid-call rejects that call and the later ones, naming each; nothing is thrown unhandled', async () => {
    fake = await fakeRuntime((method, _req, stream) => {
      if (method === 'Version') return reply(stream, 'v1', 'VersionResponse', versionReply('v1'));
      fake!.drop(); // the node went away mid-call
    });
    client = await CriClient.connect(fake.dial);
    const first = await client.listContainers().catch((e: unknown) => e);
    expect(first).toBeInstanceOf(CriError);
    expect((first as CriError).code).toBe(14);
    expect((first as Error).message).toMatch(/^CRI ListContainers: Unavailable: /);
    const later = await client.removeContainer('c1').catch((e: unknown) => e);
    expect((later as Error).message).toMatch(/^CRI RemoveContainer: Unavailable: /);
    await client.close(); // closing a dead client is fine too
  });

  it("an audit's phantom pod is removed with the reset's CRI calls, on exactly its own sandbox and containers", async () => {
    // Two pods the runtime knows: the phantom (p-ghost, c-ghost) and a live one (p-live, c-live).
    const pods = [
      { id: 'p-ghost', metadata: { name: 'ghost', uid: 'u-ghost', namespace: 'default', attempt: 0 }, state: 'SANDBOX_READY' },
      { id: 'p-live', metadata: { name: 'live', uid: 'u-live', namespace: 'default', attempt: 0 }, state: 'SANDBOX_READY' },
    ];
    const containers = [
      { id: 'c-ghost', podSandboxId: 'p-ghost', state: 'CONTAINER_RUNNING', image: { image: 'busybox' }, metadata: { name: 'ghost' } },
      { id: 'c-live', podSandboxId: 'p-live', state: 'CONTAINER_RUNNING', image: { image: 'busybox' }, metadata: { name: 'live' } },
    ];
    fake = await fakeRuntime((method, _req, stream) => {
      if (method === 'Version') return reply(stream, 'v1', 'VersionResponse', versionReply('v1'));
      if (method === 'ListPodSandbox') return reply(stream, 'v1', 'ListPodSandboxResponse', { items: pods });
      if (method === 'ListContainers') return reply(stream, 'v1', 'ListContainersResponse', { containers });
      return reply(stream, 'v1', `${method}Response`, {});
    });
    const ctrCalls: string[] = [];
    const node: NodeIo = {
      openUnixSocket: async () => fake!.dial() as Promise<Duplex>,
      exec: async (script) => (ctrCalls.push(script), { code: 0, stdout: '', stderr: '' }),
    };
    const s: NodeState = {
      ...emptyState(),
      processes: new Map([[7, { pid: 7, ppid: 1, name: 'containerd', args: 'containerd', start: 1 } as NodeState['processes'] extends Map<number, infer P> ? P : never]]),
      containers: [
        { id: 'p-ghost', kind: 'sandbox', runtime: 'containerd', pod: 'default/ghost' },
        { id: 'c-ghost', kind: 'container', runtime: 'containerd', sandboxId: 'p-ghost', pod: 'default/ghost' },
        { id: 'p-live', kind: 'sandbox', runtime: 'containerd', pod: 'default/live' },
        { id: 'c-live', kind: 'container', runtime: 'containerd', sandboxId: 'p-live', pod: 'default/live' },
      ] as NodeState['containers'],
    };
    const calls = () => fake!.seen.filter((x) => !/Version|List/.test(x.path)).map((x) => `${x.path.split('/').pop()} ${String(x.req.podSandboxId ?? x.req.containerId)}`);
    // The reset's containers step, as the engine runs its client action.
    const [reset] = containersStep.plan(s, {} as never);
    await reset!.client!(node);
    const resetCalls = calls();
    expect(resetCalls).toEqual(['StopPodSandbox p-ghost', 'RemovePodSandbox p-ghost', 'StopPodSandbox p-live', 'RemovePodSandbox p-live', 'RemoveContainer c-ghost', 'RemoveContainer c-live']);
    fake.seen.length = 0;
    // The audit's phantom remedy: the same calls, for the phantom's own sandbox and containers only.
    const fix = nodeActions({ kind: 'phantom-pod', subject: 'default/ghost', detail: '', evidence: [], target: { uid: 'u-ghost', containers: ['c-ghost', 'p-ghost'], sandboxes: ['p-ghost'], runtime: 'containerd', processes: [] } }, s);
    if ('refuse' in fix) throw new Error(fix.refuse);
    expect(fix.actions).toHaveLength(1);
    await fix.actions[0]!.client!(node);
    expect(calls()).toEqual(resetCalls.filter((c) => c.endsWith('ghost')));
    expect(ctrCalls).toEqual(['ctr -n k8s.io containers ls -q', 'ctr -n k8s.io containers ls -q']);
  });

  it('a socket that is not there fails the connect, naming Version', async () => {
    const err = await CriClient.connect(unixDial('/nonexistent/decom-cri.sock')).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/^CRI Version: Unavailable: .*ENOENT/);
    const thrown = await CriClient.connect(() => Promise.reject(new Error('ssh: channel open failed'))).catch((e: unknown) => e);
    expect((thrown as Error).message).toBe('CRI Version: Unavailable: cannot reach the runtime: ssh: channel open failed');
  });

  it('speaks over any Duplex, not only a socket (an SSH channel is one)', async () => {
    fake = await fakeRuntime((method, req, stream) => {
      if (method === 'Version') return reply(stream, 'v1', 'VersionResponse', versionReply('v1'));
      reply(stream, 'v1', 'RunPodSandboxResponse', { podSandboxId: `id-of-${String((req.config as { metadata: { name: string } }).metadata.name)}` });
    });
    client = await CriClient.connect(relayDial(fake.path));
    expect(await client.runPodSandbox({ metadata: { name: 'web', uid: 'u', namespace: 'n', attempt: 0 } })).toBe('id-of-web');
  });
});

// --- against a real containerd: Debian's 1.6 with runc and the CNI plugins ---------------

const CNI_BIN = '/usr/lib/cni';
function realSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (it starts containerd in namespaces of its own)';
  if (existsSync('/sys/fs/cgroup/cgroup.procs')) return 'this host mounts cgroup v2 alone at /sys/fs/cgroup; the test lays out v1 hierarchies as the sandbox nodes do';
  for (const p of ['/usr/bin/containerd', '/usr/bin/ctr', '/usr/sbin/runc', '/usr/bin/unshare', '/usr/bin/nsenter', '/usr/bin/setpriv', ...['bridge', 'host-local', 'loopback'].map((b) => join(CNI_BIN, b))]) {
    try {
      accessSync(p, constants.X_OK);
    } catch {
      return `${p} is missing (apt-get install -y containerd runc containernetworking-plugins util-linux)`;
    }
  }
  try {
    if (readFileSync('/bin/busybox').subarray(0, 4096).includes('ld-linux')) return '/bin/busybox is dynamically linked (apt-get install -y busybox-static)';
  } catch {
    return '/bin/busybox is missing (apt-get install -y busybox-static)';
  }
  return undefined;
}
const realSkip = realSkipReason();
if (realSkip) console.warn(`src/cri/cri.test.ts (real containerd) skipped: ${realSkip}`);

const IMAGE = 'decom.test/busybox:cri';
const NETWORK = 'decomcri';
const SUBNET = '10.244.77';

/** The project's busybox OCI tar (as the sandbox package's image.ts builds it), whose default command blocks forever: the sandbox ("pause") image. */
function buildImage(work: string): string {
  const sha = (d: Buffer | string) => createHash('sha256').update(d).digest('hex');
  const rootfs = join(work, 'rootfs');
  mkdirSync(join(rootfs, 'bin'), { recursive: true });
  copyFileSync('/bin/busybox', join(rootfs, 'bin', 'busybox'));
  for (const a of ['sh', 'sleep', 'cat']) symlinkSync('busybox', join(rootfs, 'bin', a));
  execFileSync('tar', ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '-C', rootfs, '-cf', join(work, 'layer.tar'), '.']);
  const layout = join(work, 'layout');
  mkdirSync(join(layout, 'blobs', 'sha256'), { recursive: true });
  const blob = (data: Buffer | string) => {
    const digest = sha(data);
    writeFileSync(join(layout, 'blobs', 'sha256', digest), data);
    return { digest: `sha256:${digest}`, size: Buffer.byteLength(data) };
  };
  const layer = blob(readFileSync(join(work, 'layer.tar')));
  const config = blob(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Env: ['PATH=/bin'], Cmd: ['/bin/sleep', '2147483647'] }, rootfs: { type: 'layers', diff_ids: [layer.digest] } }));
  const manifest = blob(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
    }),
  );
  writeFileSync(
    join(layout, 'index.json'),
    JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, annotations: { 'io.containerd.image.name': IMAGE } }] }),
  );
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  const out = join(work, 'image.tar');
  execFileSync('tar', ['-C', layout, '-cf', out, '.']);
  return out;
}

/** The hierarchies mounted here, each with the cgroup this process is in (co-mounted ones appear once). */
function ownCgroups(): { name: string; path: string }[] {
  const mine = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n')) {
    const [, controllers = '', path = '/'] = line.split(':');
    mine.set(controllers === '' ? 'unified' : controllers.replace(/^name=/, ''), path);
  }
  return readdirSync('/sys/fs/cgroup', { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join('/sys/fs/cgroup', e.name, 'cgroup.procs')))
    .map((e) => ({ name: e.name, path: join('/sys/fs/cgroup', e.name, mine.get(e.name) ?? '/') }));
}

/** Removes a cgroup subtree, deepest first; a cgroup whose last task just died can stay busy for a moment. */
async function removeCgroupTree(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) await removeCgroupTree(join(dir, e.name));
  for (let i = 0; ; i++) {
    try {
      rmdirSync(dir);
      return;
    } catch (e) {
      if (i >= 50) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

// Runs as PID 1 of the containerd's namespaces: everything it mounts dies with them.
const INNER = `set -eu
D=$CRI_DIR
# containerd's defaults outside --root/--state (runc's root, shim sockets, netns, the CNI
# result cache) would land in the host's /run and /var/lib: private tmpfs instead.
mount -t tmpfs -o mode=0755 decom-cri-run /run
mount -t tmpfs -o mode=0755 decom-cri-varlib /var/lib
# The snapshotter's overlayfs needs an upper dir that is not itself overlayfs.
mount -t tmpfs -o mode=0711 decom-cri-root "$D/root"
mount -t tmpfs -o mode=0711 decom-cri-state "$D/state"
# The cgroup hierarchies as seen from our cgroup namespace (rooted in the test's own cgroups).
hs=$(for h in /sys/fs/cgroup/*; do [ -L "$h" ] || [ ! -e "$h/cgroup.procs" ] || basename "$h"; done)
mount -t tmpfs -o mode=0755,nosuid,nodev,noexec cgroup /sys/fs/cgroup
for n in $hs; do
  mkdir -p "/sys/fs/cgroup/$n"
  case $n in
    unified) mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "/sys/fs/cgroup/$n" ;;
    systemd) mount -t cgroup -o nosuid,nodev,noexec,none,name=systemd cgroup "/sys/fs/cgroup/$n" ;;
    *) mount -t cgroup -o "nosuid,nodev,noexec,$n" cgroup "/sys/fs/cgroup/$n" ;;
  esac
done
ip link set lo up
exec containerd --config "$D/config.toml"
`;

interface Runtime {
  dir: string;
  sock: string;
  child: ChildProcess;
  cgroups: string[];
  log: () => string;
}

const alive = (pid: number) => existsSync(`/proc/${pid}`);

/** What a killed run left: its cgroups and temporary folder, named after its dead PID. */
async function sweepStale(): Promise<void> {
  for (const h of ownCgroups()) {
    for (const e of readdirSync(h.path, { withFileTypes: true })) {
      const m = /^decom-cri-(\d+)$/.exec(e.name);
      if (e.isDirectory() && m && !alive(Number(m[1]))) await removeCgroupTree(join(h.path, e.name));
    }
  }
  for (const e of readdirSync(tmpdir())) {
    const m = /^decom-cri-(\d+)-/.exec(e);
    if (m && !alive(Number(m[1]))) rmSync(join(tmpdir(), e), { recursive: true, force: true });
  }
}

async function startContainerd(): Promise<Runtime> {
  await sweepStale();
  const dir = tempDir(`decom-cri-${process.pid}-`);
  const sock = join(dir, 'containerd.sock');
  for (const d of ['root', 'state', 'cni', 'cni-data', 'logs', 'opt', 'image']) mkdirSync(join(dir, d));
  const image = buildImage(join(dir, 'image'));
  writeFileSync(
    join(dir, 'config.toml'),
    `version = 2
root = "${dir}/root"
state = "${dir}/state"
[grpc]
  address = "${sock}"
[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${IMAGE}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN}"
    conf_dir = "${dir}/cni"
`,
  );
  writeFileSync(
    join(dir, 'cni', '10-decomcri.conflist'),
    JSON.stringify({
      cniVersion: '0.4.0',
      name: NETWORK,
      plugins: [{ type: 'bridge', bridge: 'decomcri0', isGateway: true, ipMasq: false, ipam: { type: 'host-local', ranges: [[{ subnet: `${SUBNET}.0/24` }]], dataDir: join(dir, 'cni-data') } }],
    }),
  );
  writeFileSync(join(dir, 'inner.sh'), INNER);

  // A cgroup of our own in every hierarchy, under the one this test runs in.
  const cgroups: string[] = [];
  for (const h of ownCgroups()) {
    const path = join(h.path, `decom-cri-${process.pid}`);
    mkdirSync(path, { recursive: true });
    if (h.name === 'cpuset') for (const f of ['cpuset.cpus', 'cpuset.mems']) writeFileSync(join(path, f), readFileSync(join(h.path, f)));
    cgroups.push(path);
  }
  const logFile = join(dir, 'containerd.log');
  const out = openSync(logFile, 'a');
  const child = spawn(
    'sh',
    [
      '-c',
      // setpriv --pdeathsig: a test run that is killed takes the runtime down with it.
      'for f in "$@"; do echo $$ > "$f/cgroup.procs"; done; exec setpriv --pdeathsig KILL unshare --mount --net --pid --cgroup --fork --kill-child --mount-proc --propagation private sh "$0"',
      join(dir, 'inner.sh'),
      ...cgroups,
    ],
    { env: { ...process.env, CRI_DIR: dir }, stdio: ['ignore', out, out] },
  );
  closeSync(out);
  const rt: Runtime = { dir, sock, child, cgroups, log: () => readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n') };
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`containerd exited (${child.exitCode}):\n${rt.log()}`);
    if (spawnSync('ctr', ['--address', sock, 'version'], { stdio: 'ignore' }).status === 0) break;
    if (i > 200) throw new Error(`containerd did not answer within 20 s:\n${rt.log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  execFileSync('ctr', ['--address', sock, '-n', 'k8s.io', 'image', 'import', image], { stdio: 'pipe' });
  return rt;
}

async function stopContainerd(rt: Runtime): Promise<void> {
  // unshare --kill-child: its child, PID 1 of the namespaces, dies with it, and with that every
  // process in them (shims, pods); the mount namespace and its tmpfs mounts go away.
  if (rt.child.exitCode === null && rt.child.signalCode === null) {
    const exited = new Promise((r) => rt.child.once('exit', r));
    rt.child.kill('SIGKILL');
    await exited;
  }
  for (const c of rt.cgroups) await removeCgroupTree(c);
  rmSync(rt.dir, { recursive: true, force: true });
}

/** PID (in our namespace) of the containerd: unshare's one child. */
const containerdPid = (rt: Runtime): number => Number(readFileSync(`/proc/${rt.child.pid}/task/${rt.child.pid}/children`, 'utf8').trim().split(' ')[0]);
const inRuntimeMounts = (rt: Runtime, ...cmd: string[]): string => execFileSync('nsenter', ['-t', String(containerdPid(rt)), '-m', '--', ...cmd], { encoding: 'utf8' });

describe.skipIf(realSkip)('CRI client against a real containerd (private namespaces)', () => {
  let rt: Runtime;
  const RUN = randomUUID().slice(0, 8);
  beforeAll(async () => {
    rt = await startContainerd();
    // The CRI plugin may answer a moment after containerd's own API does.
    for (let i = 0; ; i++) {
      try {
        const c = await CriClient.connect(unixDial(rt.sock), { timeoutMs: 5_000 });
        await c.listPodSandbox();
        await c.close();
        break;
      } catch (e) {
        if (i > 50) throw new Error(`${(e as Error).message}\n${rt.log()}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  });
  afterAll(async () => {
    if (rt) await stopContainerd(rt);
  });

  const podConfig = (name: string, uid: string, network: 'NODE' | 'POD'): PodSandboxConfig => ({
    metadata: { name, uid, namespace: 'decom-test', attempt: 0 },
    ...(network === 'POD' ? { hostname: name } : {}), // runc refuses a hostname without a UTS namespace of the pod's own
    logDirectory: join(rt.dir, 'logs', uid),
    labels: { 'decom.test/run': RUN, 'io.kubernetes.pod.uid': uid },
    annotations: { 'decom.test/note': 'made by src/cri/cri.test.ts' },
    linux: { cgroupParent: `/kubepods/besteffort/pod${uid}`, securityContext: { namespaceOptions: { network, pid: 'CONTAINER', ipc: 'POD' } } },
  });
  const appConfig = (uid: string): ContainerConfig => ({
    metadata: { name: 'app', attempt: 0 },
    image: { image: IMAGE },
    command: ['/bin/sleep', '3600'],
    envs: [{ key: 'DECOM', value: 'test' }],
    labels: { 'decom.test/run': RUN, 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': 'app' },
    logPath: 'app/0.log',
  });

  for (const version of ['v1', 'v1alpha2'] as const) {
    it(`${version}: runs a hostNetwork pod and container, lists them by label, stops and removes them`, async () => {
      // v1 is negotiated (and reached through a relay Duplex, as over SSH); v1alpha2 is forced.
      const client = version === 'v1' ? await CriClient.connect(relayDial(rt.sock)) : await CriClient.connect(unixDial(rt.sock), { version });
      try {
        expect(client.apiVersion).toBe(version);
        expect(client.runtime.name).toBe('containerd');
        expect(client.runtime.apiVersion).toBe(version);
        expect(client.runtime.version).toMatch(/^1\.6\./);

        const uid = randomUUID();
        const sandbox = podConfig(`web-${version}`, uid, 'NODE');
        const podId = await client.runPodSandbox(sandbox);
        expect(podId).toMatch(/^[0-9a-f]{64}$/);
        const ctrId = await client.createContainer(podId, appConfig(uid), sandbox);
        await client.startContainer(ctrId);

        const pods = await client.listPodSandbox({ labelSelector: { 'decom.test/run': RUN, 'io.kubernetes.pod.uid': uid } });
        expect(pods).toHaveLength(1);
        expect(pods[0]).toMatchObject({ id: podId, state: 'SANDBOX_READY', metadata: sandbox.metadata, annotations: sandbox.annotations });
        expect(pods[0]?.labels).toMatchObject(sandbox.labels!);
        expect(pods[0]!.createdAt / 1e6).toBeGreaterThan(Date.now() - 60_000);
        const ctrs = await client.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
        expect(ctrs.map((c) => [c.id, c.podSandboxId, c.state, c.metadata?.name])).toEqual([[ctrId, podId, 'CONTAINER_RUNNING', 'app']]);
        expect(await client.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': 'nobody' } })).toEqual([]);

        const { status, info } = await client.containerStatus(ctrId, true);
        expect(status).toMatchObject({ id: ctrId, state: 'CONTAINER_RUNNING', image: { image: IMAGE }, exitCode: 0 });
        expect(status.startedAt).toBeGreaterThan(0);
        const pid = (JSON.parse(info.info ?? '{}') as { pid?: number }).pid;
        expect(pid).toBeGreaterThan(0);
        const podStatus = await client.podSandboxStatus(podId, true);
        expect(podStatus.status).toMatchObject({ id: podId, state: 'SANDBOX_READY', linux: { namespaces: { options: { network: 'NODE', pid: 'CONTAINER' } } } });
        // The cgroup parent is the kubelet's cgroupfs layout, inside the runtime's cgroup namespace.
        const pidsCgroup = rt.cgroups.find((c) => c.includes('/pids/'))!;
        expect(existsSync(join(pidsCgroup, 'kubepods', 'besteffort', `pod${uid}`, ctrId))).toBe(true);

        await client.stopPodSandbox(podId);
        expect((await client.podSandboxStatus(podId)).status.state).toBe('SANDBOX_NOTREADY');
        expect((await client.containerStatus(ctrId)).status).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 137 });
        await client.stopPodSandbox(podId); // idempotent, as the CRI requires

        await client.removePodSandbox(podId);
        expect(await client.listContainers({ podSandboxId: podId })).toEqual([]);
        expect(await client.listPodSandbox({ id: podId })).toEqual([]);
        // RemovePodSandbox is idempotent (the CRI requires it; containerd answers OK for an unknown
        // id), so absence shows in the status calls.
        await client.removePodSandbox(podId);
        const podGone = await client.podSandboxStatus(podId).catch((e: unknown) => e);
        expect(isNotFound(podGone), String(podGone)).toBe(true);
        expect((podGone as Error).message).toMatch(/^CRI PodSandboxStatus: NotFound: /);
        const gone = await client.containerStatus(ctrId).catch((e: unknown) => e);
        expect(isNotFound(gone), String(gone)).toBe(true);
        expect((gone as Error).message).toMatch(/^CRI ContainerStatus: NotFound: /);
      } finally {
        await client.close();
      }
    });
  }

  it('StopPodSandbox of a pod-network pod runs the CNI DEL: lease and netns are gone', async () => {
    const client = await CriClient.connect(unixDial(rt.sock));
    try {
      const uid = randomUUID();
      const sandbox = podConfig('net', uid, 'POD');
      const podId = await client.runPodSandbox(sandbox);
      const { status, info } = await client.podSandboxStatus(podId, true);
      const ip = status.network?.ip ?? '';
      expect(ip).toMatch(new RegExp(`^${SUBNET.replaceAll('.', '\\.')}\\.\\d+$`));
      const lease = join(rt.dir, 'cni-data', NETWORK, ip);
      expect(readFileSync(lease, 'utf8').split('\r\n')[0]).toBe(podId);
      const netns = (JSON.parse(info.info ?? '{}') as { runtimeSpec?: { linux?: { namespaces?: { type: string; path?: string }[] } } }).runtimeSpec?.linux?.namespaces?.find(
        (n) => n.type === 'network',
      )?.path;
      expect(netns).toMatch(/^\/var\/run\/netns\/cni-/);
      expect(inRuntimeMounts(rt, 'ls', '/var/run/netns').trim()).toBe(netns!.split('/').pop());

      await client.stopPodSandbox(podId);
      expect(existsSync(lease)).toBe(false);
      expect(inRuntimeMounts(rt, 'ls', '/var/run/netns').trim()).toBe('');
      await client.removePodSandbox(podId);
      expect(await client.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).toEqual([]);
    } finally {
      await client.close();
    }
  });
});

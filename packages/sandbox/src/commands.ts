/** What each `decom-sandbox` subcommand does: up, down, status, api, scenarios, ssh, image and versions. */
import { spawnSync } from 'node:child_process';
import { files, hostAddr, instance, instanceName } from './layout.js';
import { SCENARIOS } from './scenarios/catalog.js';
import { down, downAll, readState, status, up, checkUpOptions, type UpOptions } from './sandbox.js';
import { inputError } from 'decom/errors';
import { wholeNumber } from 'decom/flags';
import { requireRoot } from './prereq.js';
import { apiRunning, kubeconfigFile, startApi, stopApi } from './api/control.js';
import { buildAuditImage } from './audit-image.js';
import { RUNTIME_CACHE, RUNTIME_FAMILIES, cachedKubectl, readManifest, resolveRuntime } from './runtimes.js';

export async function upCommand(o: {
  nodes: string;
  controlPlanes: string;
  init: string;
  containerd: string;
  containerdPaths: string;
  scenario?: string;
  etcd: boolean;
  services: string;
  api: boolean;
  nodeMonitorGracePeriod: string;
  instance?: string;
}): Promise<void> {
  const inst = instance(instanceName(o.instance));
  const opts: UpOptions = {
    nodes: wholeNumber('--nodes', o.nodes),
    controlPlanes: wholeNumber('--control-planes', o.controlPlanes),
    init: o.init,
    containerd: o.containerd,
    containerdPaths: o.containerdPaths,
    scenario: o.scenario ?? null,
    etcd: o.etcd,
    services: wholeNumber('--services', o.services),
    api: o.api,
    nodeMonitorGracePeriod: wholeNumber('--node-monitor-grace-period', o.nodeMonitorGracePeriod),
    log: (line) => process.stderr.write(`sandbox: ${line}\n`),
  };
  checkUpOptions(opts);
  const t0 = performance.now();
  const state = await up(opts, inst);
  const f = files(inst.dir);
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  process.stdout.write(
    [
      `sandbox up${inst.name === null ? '' : ` (instance ${inst.name})`}: ${state.nodes.length} node(s) in ${secs} s${state.scenario ? `, scenario ${state.scenario}` : ''}${state.etcd ? ', etcd' : ''}${state.services ? `, ${state.services} Services` : ''}`,
      ...state.nodes.map((n) => `  ${n.name.padEnd(8)} ${n.addr.padEnd(14)} ${n.roles.join(',').padEnd(20)} ${n.init.padEnd(8)} containerd ${n.runtime.containerd.padEnd(22)} ${`paths ${n.containerdPaths}`.padEnd(13)} ${n.bootState}`),
      `inventory:   ${f.inventory}`,
      `ssh key:     ${f.key}`,
      `known_hosts: ${f.knownHosts}`,
      `log in:      decom sandbox ssh${inst.name === null ? '' : ` --instance ${inst.name}`} node1`,
      ...(state.api ? [`kubeconfig:  ${kubeconfigFile(f.dir)}   (export KUBECONFIG=${kubeconfigFile(f.dir)})`] : []),
      '',
    ].join('\n'),
  );
}

export async function downCommand(o: { instance?: string; all: boolean }): Promise<void> {
  if (o.all) {
    if (o.instance !== undefined) throw inputError('down: --all removes every instance: give it or --instance, not both');
    const { instances, nodes } = await downAll();
    process.stdout.write(nodes ? `sandbox down --all: ${nodes} node(s) of ${instances} instance(s) stopped, host cleaned\n` : 'sandbox down --all: nothing was up; host cleaned\n');
    return;
  }
  const inst = instance(instanceName(o.instance));
  const { nodes } = await down(inst);
  const which = inst.name === null ? '' : ` (instance ${inst.name})`;
  process.stdout.write(nodes ? `sandbox down${which}: ${nodes} node(s) stopped, host cleaned\n` : `sandbox down${which}: nothing was up; host cleaned\n`);
}

export async function statusCommand(output: 'text' | 'json', instanceFlag?: string): Promise<void> {
  const s = await status(instance(instanceName(instanceFlag)));
  // The API: null when the sandbox has none, otherwise whether its process runs and where its kubeconfig is.
  const api = s.state?.api ? { running: apiRunning(s.dir), kubeconfig: kubeconfigFile(s.dir) } : null;
  if (output === 'json') {
    process.stdout.write(`${JSON.stringify({ dir: s.dir, scenario: s.state?.scenario ?? null, etcd: s.state?.etcd ?? false, services: s.state?.services ?? 0, api, nodes: s.nodes }, null, 2)}\n`);
    return;
  }
  if (!s.state) {
    process.stdout.write(`no sandbox is up (${s.dir})\n`);
    return;
  }
  process.stdout.write(
    [
      `sandbox in ${s.dir}: ${s.nodes.length} node(s)${s.state.scenario ? `, scenario ${s.state.scenario}` : ''}${s.state.etcd ? ', etcd' : ''}${s.state.services ? `, ${s.state.services} Services` : ''}`,
      ...s.nodes.map((n) => `  ${n.name.padEnd(8)} ${n.addr.padEnd(14)} ${n.roles.join(',').padEnd(20)} ${n.init.padEnd(8)} containerd ${(n.runtime?.containerd ?? 'unknown').padEnd(22)} ${`paths ${n.containerdPaths ?? 'default'}`.padEnd(13)} ${n.state}`),
      ...(api ? [`  api      ${api.running ? 'running' : 'stopped'}, kubeconfig ${api.kubeconfig}`] : []),
      '',
    ].join('\n'),
  );
}

/** `sandbox api start|stop|status`: the API's process, its objects kept across a stop. */
export async function apiCommand(action: 'start' | 'stop' | 'status', instanceFlag?: string): Promise<number> {
  requireRoot(`decom sandbox api ${action}`);
  const { dir } = instance(instanceName(instanceFlag));
  const state = readState(dir);
  if (!state) throw inputError(`no sandbox is up (${dir})`);
  if (!state.api) throw inputError('this sandbox has no Kubernetes API: bring it up with `decom sandbox up --api` (or a cluster scenario)');
  if (action === 'start') {
    const r = await startApi(dir, hostAddr(state.subnet ?? 0));
    process.stdout.write(`${r.started ? 'started' : 'already running'}: pid ${r.pid}, kubeconfig ${kubeconfigFile(dir)}\n`);
  } else if (action === 'stop') {
    process.stdout.write((await stopApi(dir)) ? 'stopped (its objects are kept for the next start)\n' : 'not running\n');
  } else {
    const up = apiRunning(dir);
    process.stdout.write(up ? `running, kubeconfig ${kubeconfigFile(dir)}\n` : 'not running\n');
    return up ? 0 : 1;
  }
  return 0;
}

export function scenariosCommand(): void {
  for (const [name, s] of Object.entries(SCENARIOS)) process.stdout.write(`${name.padEnd(20)} ${s.description}\n`);
}

/** OpenSSH with the sandbox's key and pinned host keys: what a user would type, made short. */
export async function sshCommand(node: string, command: string[], instanceFlag?: string): Promise<number> {
  requireRoot('decom sandbox ssh'); // the key is root's
  const { dir } = instance(instanceName(instanceFlag));
  const state = readState(dir);
  if (!state) throw inputError(`no sandbox is up (${dir})`);
  const n = state.nodes.find((x) => x.name === node);
  if (!n) throw inputError(`no node "${node}" in the sandbox; nodes: ${state.nodes.map((x) => x.name).join(', ')}`);
  const f = files(dir);
  const r = spawnSync(
    'ssh',
    ['-i', f.key, '-o', `UserKnownHostsFile=${f.knownHosts}`, '-o', 'StrictHostKeyChecking=yes', '-o', 'BatchMode=yes', `root@${n.addr}`, ...command],
    { stdio: 'inherit' },
  );
  return r.status ?? 1;
}

/** `sandbox image`: decom's audit image (packages/decom/deploy/Dockerfile) built here (no registry, no daemon) and exported as an OCI archive. */
export async function imageCommand(o: { cache: boolean; output: 'text' | 'json' }): Promise<void> {
  const r = await buildAuditImage({ cache: o.cache, log: (line) => process.stderr.write(`image: ${line}\n`) });
  if (o.output === 'json') {
    process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
    return;
  }
  const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
  process.stdout.write(
    [
      `image ${r.ref} built in ${r.seconds.toFixed(1)} s${o.cache ? '' : ' (no cache)'}; base ${r.base}`,
      `archive:  ${r.archive}  (${mb(r.bytes)}; ${mb(r.imageBytes)} unpacked)`,
      `load it:  ctr -n k8s.io images import ${r.archive}   (containerd names it ${r.ref})`,
      '',
    ].join('\n'),
  );
}

/** `sandbox versions`: what each --containerd gives a node, and the tests' kubectl. */
export function versionsCommand(o: { output: 'text' | 'json'; which?: string }): void {
  if (o.which !== undefined) {
    if (o.which !== 'kubectl') throw inputError(`--which: only kubectl is fetched as a program of its own, got "${o.which}"`);
    const bin = cachedKubectl();
    if (!bin) throw inputError(`kubectl is not in the runtime cache ${RUNTIME_CACHE}: run packages/sandbox/scripts/fetch-runtimes.sh (./scripts/setup runs it)`);
    process.stdout.write(`${bin}\n`);
    return;
  }
  const m = readManifest();
  const runtimes = RUNTIME_FAMILIES.map((family) => {
    try {
      const { binds: _, ...r } = resolveRuntime(family);
      return r;
    } catch (e) {
      return { family, missing: (e as Error).message };
    }
  });
  const kubectl = m?.components.kubectl;
  if (o.output === 'json') {
    process.stdout.write(`${JSON.stringify({ cache: RUNTIME_CACHE, fetchedAt: m?.fetchedAt ?? null, runtimes, kubectl: kubectl ?? null, skipped: m?.skipped ?? [] }, null, 2)}\n`);
    return;
  }
  process.stdout.write(
    [
      `runtime cache ${RUNTIME_CACHE}${m ? ` (fetched ${m.fetchedAt})` : ' (empty: run ./scripts/setup)'}`,
      ...runtimes.map((r) => ('missing' in r ? `  --containerd ${r.family.padEnd(4)} not available: ${r.missing}` : `  --containerd ${r.family.padEnd(4)} containerd ${r.containerd} (${r.source}), CNI plugins ${r.cni}`)),
      `  kubectl            ${kubectl ? `${kubectl.version} (Debian ${kubectl.suite})` : 'not fetched'}`,
      ...(m?.skipped ?? []).map((s) => `  skipped: ${s.package} ${s.version} (Debian ${s.suite}) cannot run here: ${s.why}`),
      '',
    ].join('\n'),
  );
}

import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { inputError } from '../util/errors.js';
import { VERSION } from '../version.js';
import type { Kube } from './context.js';

/**
 * The kubeconfig the user gave, found as kubectl finds it: --kubeconfig, then
 * $KUBECONFIG, then ~/.kube/config. Undefined when there is none: the client
 * library would then silently target http://localhost:8080, which nobody means.
 */
export function kubeconfigPath(flag?: string): string | undefined {
  if (flag) {
    if (!existsSync(flag)) throw inputError(`--kubeconfig ${flag}: no such file`);
    return flag;
  }
  const env = process.env.KUBECONFIG?.split(':').find((p) => p && existsSync(p));
  if (env) return env;
  const home = join(homedir(), '.kube', 'config');
  return existsSync(home) ? home : undefined;
}

/**
 * The kubeconfig the inventory names for its cluster (decom_kubeconfig, a host or
 * group variable): --kubeconfig overrides it, it overrides $KUBECONFIG. Hosts that
 * name different files are different clusters: refused.
 */
export function inventoryKubeconfig(inventoryFile: string, hosts: { vars: Record<string, unknown> }[]): string | undefined {
  const named = [...new Set(hosts.map((h) => h.vars.decom_kubeconfig).filter((v) => v !== undefined).map(String))];
  if (named.length > 1) throw inputError(`${inventoryFile}: the hosts name different clusters in decom_kubeconfig (${named.join(', ')}): one cluster at a time`);
  if (named[0] && !existsSync(named[0])) throw inputError(`${inventoryFile}: decom_kubeconfig ${named[0]}: no such file`);
  return named[0];
}

/** The files $KUBECONFIG lists (kubectl's rule: missing ones are ignored). */
const envFiles = () => (process.env.KUBECONFIG ?? '').split(':').filter((p) => p && existsSync(p));

/** Where the run's API access comes from, for messages: "FILE", "FILE+FILE", or "in-cluster". */
export type KubeSource = string;

/**
 * A KubeConfig loaded as kubectl loads one: --kubeconfig, else every file of
 * $KUBECONFIG merged (the first to set a name or the current context wins), else
 * ~/.kube/config, else the pod's service account when decom runs in a pod. With
 * --context, that context. Loads the client library (~0.4 s): only commands that
 * talk to the API pay for it. Undefined when there is nothing to load.
 */
export async function loadKubeConfig(flag?: string, context?: string) {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  const files = flag ? [kubeconfigPath(flag) as string] : envFiles().length ? envFiles() : [kubeconfigPath()].filter((f): f is string => !!f);
  let source: KubeSource;
  if (files.length) {
    for (const file of files) {
      const one = new k8s.KubeConfig();
      try {
        one.loadFromFile(file);
      } catch (e) {
        throw inputError(`kubeconfig ${file}: ${(e as Error).message.split('\n')[0]}`);
      }
      if (!kc.currentContext && one.currentContext) kc.currentContext = one.currentContext;
      for (const c of one.clusters) if (!kc.getCluster(c.name)) kc.addCluster(c);
      for (const u of one.users) if (!kc.getUser(u.name)) kc.addUser(u);
      for (const c of one.contexts) if (!kc.getContextObject(c.name)) kc.addContext(c);
    }
    source = files.join('+');
  } else if (process.env.KUBERNETES_SERVICE_HOST && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) {
    kc.loadFromCluster();
    source = 'in-cluster';
  } else return undefined;
  if (context) {
    if (!kc.getContextObject(context)) {
      throw inputError(`--context ${context}: no such context in ${source} (it has ${kc.contexts.map((c) => c.name).join(', ') || 'none'})`);
    }
    kc.setCurrentContext(context);
  }
  if (!kc.getCurrentContext() || !kc.getCurrentCluster()) {
    throw inputError(`${source}: no current context names a cluster; pass --context (contexts: ${kc.contexts.map((c) => c.name).join(', ') || 'none'})`);
  }
  return { kc, k8s, source, server: kc.getCurrentCluster()?.server ?? '(no server)' };
}

/** How decom's requests name themselves in the API server's audit log and metrics. */
const USER_AGENT = `decom/${VERSION}`;

type K8s = typeof import('@kubernetes/client-node');
type KubeConfig = InstanceType<K8s['KubeConfig']>;

/**
 * A typed client of the kubeconfig's current cluster, as `makeApiClient` makes one,
 * with decom's User-Agent on every request (the client library's own is node-fetch's).
 */
export function apiClient<T>(k8s: K8s, kc: KubeConfig, api: new (config: ReturnType<K8s['createConfiguration']>) => T): T {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw inputError('the kubeconfig names no current cluster');
  const auth = {
    getName: () => 'decom',
    applySecurityAuthentication: async (ctx: Parameters<KubeConfig['applySecurityAuthentication']>[0]) => {
      await kc.applySecurityAuthentication(ctx);
      ctx.setHeaderParam('User-Agent', USER_AGENT);
    },
  };
  return new api(k8s.createConfiguration({ baseServer: new k8s.ServerConfiguration(server, {}), authMethods: { default: auth } }));
}

/** The core client alone, from one kubeconfig file (the Node check of `verify` and the reset). */
export async function coreApi(path: string) {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return { api: apiClient(k8s, kc, k8s.CoreV1Api), server: kc.getCurrentCluster()?.server ?? '(no server)' };
}

/** Every typed client the cluster side uses, from the kubeconfig kubectl would use. */
export async function kubeClients(flag?: string, context?: string): Promise<Kube | undefined> {
  const loaded = await loadKubeConfig(flag, context);
  if (!loaded) return undefined;
  const { kc, k8s, server } = loaded;
  return {
    core: apiClient(k8s, kc, k8s.CoreV1Api),
    apps: apiClient(k8s, kc, k8s.AppsV1Api),
    storage: apiClient(k8s, kc, k8s.StorageV1Api),
    policy: apiClient(k8s, kc, k8s.PolicyV1Api),
    certificates: apiClient(k8s, kc, k8s.CertificatesV1Api),
    coordination: apiClient(k8s, kc, k8s.CoordinationV1Api),
    server,
  };
}

/**
 * What the operator's kubeconfig says the cluster is: the CA its current context
 * trusts (as a PEM body) and its API server. Read with the YAML parser, not the
 * client library: no API call, no 0.4 s load. Undefined when it names neither.
 */
export async function operatorIdentity(path: string): Promise<{ caBodies: string[]; servers: string[] } | undefined> {
  const [{ parse }, { readFileSync }, { dirname, resolve }, { pemBody }] = await Promise.all([
    import('yaml'), import('node:fs'), import('node:path'), import('../probes/parse.js'),
  ]);
  type Doc = { 'current-context'?: string; contexts?: { name?: string; context?: { cluster?: string } }[]; clusters?: { name?: string; cluster?: Record<string, string> }[] };
  let doc: Doc;
  try {
    doc = (parse(readFileSync(path, 'utf8')) ?? {}) as Doc;
  } catch {
    return undefined; // an unreadable kubeconfig is reported by the API check that uses it
  }
  const ctx = doc.contexts?.find((c) => c.name === doc['current-context'])?.context;
  // The current context's cluster; the only cluster only when no context is current.
  const cluster = doc['current-context'] ? doc.clusters?.find((c) => c.name === ctx?.cluster)?.cluster : doc.clusters?.length === 1 ? doc.clusters[0]?.cluster : undefined;
  if (!cluster) return undefined;
  const caData = cluster['certificate-authority-data'];
  const caFile = cluster['certificate-authority'];
  let pem = '';
  try {
    pem = caData ? Buffer.from(caData, 'base64').toString('utf8') : caFile ? readFileSync(resolve(dirname(path), caFile), 'utf8') : '';
  } catch {
    pem = '';
  }
  const body = pemBody(pem);
  const servers = cluster.server ? [cluster.server] : [];
  return body || servers.length ? { caBodies: body ? [body] : [], servers } : undefined;
}

/** An API error's code (client-node's ApiException), 404, 409, 429…; undefined for a network error. */
export const codeOf = (e: unknown): number | undefined => (e as { code?: number })?.code;

interface Status {
  message?: string;
  details?: { causes?: { reason?: string; message?: string }[] };
}

/**
 * The Status an API error's body carries, when it carries one; a plain-text body
 * (priority and fairness' 429, a proxy's error) as a Status with that message.
 */
export function apiStatus(e: unknown): Status | undefined {
  const body = (e as { body?: unknown })?.body;
  try {
    const status = (typeof body === 'string' ? JSON.parse(body) : body) as Status | undefined;
    return status && typeof status === 'object' ? status : undefined;
  } catch {
    const text = typeof body === 'string' ? body.trim().split('\n')[0] : '';
    return text ? { message: text } : undefined;
  }
}

/** An API error in one line: its Status message when it has one, else the error's first line (a network error). */
export const errorLine = (e: unknown): string => {
  const message = apiStatus(e)?.message;
  return message ? `${message} (HTTP ${codeOf(e)})` : (String((e as Error)?.message ?? e).split('\n')[0] ?? '');
};

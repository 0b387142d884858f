/**
 * Reaching the Kubernetes API as kubectl does: which kubeconfig and context (--kubeconfig, the
 * inventory's decom_kubeconfig, $KUBECONFIG, ~/.kube/config, a pod's service account), and the clients made from it.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { inputError } from '../util/errors.js';
import { VERSION } from '../util/version.js';
import type { ApiGet, Kube } from './context.js';

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

/**
 * Where the API is: the kubeconfig kubectl would use and the context. `kubeconfig`
 * undefined: kubectl's own search (every file of $KUBECONFIG merged, ~/.kube/config,
 * the pod's service account); `context` undefined: the current context.
 */
export interface ApiSource {
  kubeconfig?: string;
  context?: string;
}

/**
 * The API a command works with, from its flags and its inventory: --kubeconfig, else
 * the inventory's decom_kubeconfig (its hosts must agree), else kubectl's own search;
 * with --context. A file named that does not exist is refused here, before any host
 * is contacted.
 */
export function apiSource(inventoryFile: string, hosts: { vars: Record<string, unknown> }[], flags: { kubeconfig?: string; context?: string }): ApiSource {
  const kubeconfig = flags.kubeconfig ? kubeconfigPath(flags.kubeconfig) : inventoryKubeconfig(inventoryFile, hosts);
  return { ...(kubeconfig ? { kubeconfig } : {}), ...(flags.context ? { context: flags.context } : {}) };
}

/**
 * The kubeconfig files a source loads, in kubectl's order of precedence: its own file,
 * else every existing file of $KUBECONFIG, else ~/.kube/config. None: nothing to load
 * (in a pod, the service account is then the API's).
 */
export function kubeconfigFiles(source: ApiSource): string[] {
  if (source.kubeconfig) return [kubeconfigPath(source.kubeconfig) as string];
  const env = envFiles();
  return env.length ? env : [kubeconfigPath()].filter((f): f is string => !!f);
}

/** Whether decom runs in a pod with a service account's token (the API's last resort, as client-go's). */
const inCluster = () => !!process.env.KUBERNETES_SERVICE_HOST && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token');

/** Where the run's API access comes from, for messages: "FILE", "FILE+FILE", or "in-cluster". */
export type KubeSource = string;

/**
 * A KubeConfig loaded as kubectl loads one: the source's file (--kubeconfig, the
 * inventory's), else every file of $KUBECONFIG merged (the first to set a name or the
 * current context wins), else ~/.kube/config, else the pod's service account when
 * decom runs in a pod. With the source's context (--context), that context. Loads the
 * client library (~0.4 s): only commands that talk to the API pay for it. Undefined
 * when there is nothing to load.
 */
export async function loadKubeConfig(api: ApiSource) {
  const { context } = api;
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  const files = kubeconfigFiles(api);
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
  } else if (inCluster()) {
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
/** The authentication decom's requests carry: the kubeconfig's, with decom's User-Agent (the client library's own is node-fetch's). */
function authOf(kc: KubeConfig) {
  return {
    getName: () => 'decom',
    applySecurityAuthentication: async (ctx: Parameters<KubeConfig['applySecurityAuthentication']>[0]) => {
      await kc.applySecurityAuthentication(ctx);
      ctx.setHeaderParam('User-Agent', USER_AGENT);
    },
  };
}

/** The current cluster's URL; a kubeconfig that names none is bad input. */
function serverOf(kc: KubeConfig): string {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw inputError('the kubeconfig names no current cluster');
  return server;
}

/** A typed client of the kubeconfig's current cluster, as `makeApiClient` makes one, with decom's User-Agent on every request. */
export function apiClient<T>(k8s: K8s, kc: KubeConfig, api: new (config: ReturnType<K8s['createConfiguration']>) => T): T {
  return new api(k8s.createConfiguration({ baseServer: new k8s.ServerConfiguration(serverOf(kc), {}), authMethods: { default: authOf(kc) } }));
}

/**
 * A GET of any path, answered as JSON, through the client library's own transport
 * (its TLS, credentials and proxy): what no typed client covers, discovery and the
 * metadata-only lists of resources known only at run time. A failure is the library's
 * ApiException, so errorLine and codeOf read it as any other.
 */
export function apiGet(k8s: K8s, kc: KubeConfig): ApiGet {
  const config = k8s.createConfiguration({ baseServer: new k8s.ServerConfiguration(serverOf(kc), {}), authMethods: { default: authOf(kc) } });
  const auth = authOf(kc);
  return async (path, o = {}) => {
    const ctx = config.baseServer.makeRequestContext(path, k8s.HttpMethod.GET);
    ctx.setHeaderParam('Accept', o.accept ?? 'application/json');
    for (const [k, v] of Object.entries(o.query ?? {})) ctx.setQueryParam(k, v);
    await auth.applySecurityAuthentication(ctx);
    const res = await config.httpApi.send(ctx).toPromise();
    const text = await res.body.text();
    if (res.httpStatusCode < 200 || res.httpStatusCode > 299) throw new k8s.ApiException(res.httpStatusCode, `GET ${path}`, text, res.headers);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new Error(`GET ${path}: the API answered ${res.headers['content-type'] ?? 'something'} that is not JSON`);
    }
  };
}

/**
 * Every typed client decom uses, from the source's kubeconfig and context: THE way
 * decom reaches the API (the decommission, verify's and the reset's Node check, the
 * audit's lists and its --fix). Undefined when there is nothing to load.
 */
export async function kubeClients(source: ApiSource): Promise<Kube | undefined> {
  const loaded = await loadKubeConfig(source);
  if (!loaded) return undefined;
  const { kc, k8s, server } = loaded;
  return {
    core: apiClient(k8s, kc, k8s.CoreV1Api),
    apps: apiClient(k8s, kc, k8s.AppsV1Api),
    storage: apiClient(k8s, kc, k8s.StorageV1Api),
    policy: apiClient(k8s, kc, k8s.PolicyV1Api),
    certificates: apiClient(k8s, kc, k8s.CertificatesV1Api),
    coordination: apiClient(k8s, kc, k8s.CoordinationV1Api),
    registration: apiClient(k8s, kc, k8s.ApiregistrationV1Api),
    get: apiGet(k8s, kc),
    server,
  };
}

/**
 * What the operator's kubeconfig says the cluster is: the CA (as a PEM body) and the
 * API server of the context in use, the source's (--context) or else the current one,
 * from the files the API clients load, merged as loadKubeConfig merges them (the first
 * to name a context or cluster, or set the current context, wins). Read with the YAML
 * parser, not the client library: no API call, no 0.4 s load. Undefined when there is
 * no file, one cannot be read (the API check that uses it says so), or the context
 * names neither. A --context no file has is the user's error, said before any host is
 * contacted.
 */
export async function operatorIdentity(source: ApiSource): Promise<{ caBodies: string[]; servers: string[] } | undefined> {
  const files = kubeconfigFiles(source);
  if (!files.length) {
    if (source.context && !inCluster()) throw inputError(`--context ${source.context}: no kubeconfig was found to look for it in (--kubeconfig, the inventory's decom_kubeconfig, $KUBECONFIG, ~/.kube/config)`);
    return undefined;
  }
  const [{ parse }, { readFileSync }, { dirname, resolve }, { pemBody }] = await Promise.all([
    import('yaml'), import('node:fs'), import('node:path'), import('../probes/parse.js'),
  ]);
  type Doc = { 'current-context'?: string; contexts?: { name?: string; context?: { cluster?: string } }[]; clusters?: { name?: string; cluster?: Record<string, string> }[] };
  let current: string | undefined;
  const contexts = new Map<string, { cluster?: string }>();
  const clusters = new Map<string, { cluster: Record<string, string>; file: string }>();
  for (const file of files) {
    let doc: Doc;
    try {
      doc = (parse(readFileSync(file, 'utf8')) ?? {}) as Doc;
    } catch {
      return undefined; // an unreadable kubeconfig is reported by the API check that uses it
    }
    if (!current && doc['current-context']) current = doc['current-context'];
    for (const c of doc.contexts ?? []) if (c?.name && !contexts.has(c.name)) contexts.set(c.name, c.context ?? {});
    for (const c of doc.clusters ?? []) if (c?.name && !clusters.has(c.name)) clusters.set(c.name, { cluster: c.cluster ?? {}, file });
  }
  if (source.context && !contexts.has(source.context)) {
    throw inputError(`--context ${source.context}: no such context in ${files.join('+')} (it has ${[...contexts.keys()].join(', ') || 'none'})`);
  }
  const name = source.context ?? current;
  // The context's cluster; the only cluster only when no context is named or current.
  const entry = name ? clusters.get(contexts.get(name)?.cluster ?? '') : clusters.size === 1 ? [...clusters.values()][0] : undefined;
  if (!entry) return undefined;
  const { cluster, file } = entry;
  const caData = cluster['certificate-authority-data'];
  const caFile = cluster['certificate-authority'];
  let pem = '';
  try {
    // A relative CA file is relative to the kubeconfig that names it, as kubectl reads it.
    pem = caData ? Buffer.from(caData, 'base64').toString('utf8') : caFile ? readFileSync(resolve(dirname(file), caFile), 'utf8') : '';
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

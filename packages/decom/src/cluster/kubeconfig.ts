/**
 * Reaching the Kubernetes API as kubectl does: which kubeconfig and context (the search
 * of KUBECONFIG_ORDER), and the clients made from it.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { inputError } from '../util/errors.js';
import { VERSION } from '../util/version.js';
import type { ApiGet, Kube } from './context.js';

/**
 * Where decom looks for the cluster's API, in this order: the first place that holds
 * one is used (kubectl's own search, after decom's two). findApi walks it; the errors
 * that find none and the --kubeconfig help name it (kubeconfigOrder); the pages that
 * state the order are checked against it (test/docs-lists.test.ts).
 */
export const KUBECONFIG_ORDER = ['--kubeconfig', "the inventory's decom_kubeconfig", '$KUBECONFIG', '~/.kube/config', "the pod's service account"] as const;
export type KubeconfigPlace = (typeof KUBECONFIG_ORDER)[number];

/**
 * The places that are kubeconfig files: verify's order. verify asks the API only when a
 * file is found (kubeconfigFiles), never of the pod's service account; run and audit
 * search all of KUBECONFIG_ORDER (kubeClients).
 */
export const KUBECONFIG_FILES_ORDER: readonly KubeconfigPlace[] = KUBECONFIG_ORDER.filter((p) => p !== "the pod's service account");

/** An order in words, for errors: "--kubeconfig, the inventory's decom_kubeconfig, …". */
export const kubeconfigOrder = (order: readonly KubeconfigPlace[] = KUBECONFIG_ORDER): string => order.join(', ');

/** --kubeconfig's default, for its --help: the places after it, "default: the inventory's decom_kubeconfig, …". */
export const kubeconfigDefault = (order: readonly KubeconfigPlace[] = KUBECONFIG_ORDER): string =>
  `default: ${kubeconfigOrder(order.filter((p) => p !== '--kubeconfig'))}`;

/** --kubeconfig's file, which must exist: a name given is never silently passed over. */
function flagFile(file: string): string {
  if (!existsSync(file)) throw inputError(`--kubeconfig ${file}: no such file`);
  return file;
}

/**
 * The kubeconfig the inventory names for its cluster (decom_kubeconfig, a host or
 * group variable). Hosts that name different files are different clusters: refused.
 */
export function inventoryKubeconfig(inventoryFile: string, hosts: { vars: Record<string, unknown> }[]): string | undefined {
  const named = [...new Set(hosts.map((h) => h.vars.decom_kubeconfig).filter((v) => v !== undefined).map(String))];
  if (named.length > 1) throw inputError(`${inventoryFile}: the hosts name different clusters in decom_kubeconfig (${named.join(', ')}): one cluster at a time`);
  if (named[0] && !existsSync(named[0])) throw inputError(`${inventoryFile}: decom_kubeconfig ${named[0]}: no such file`);
  return named[0];
}

/** The files $KUBECONFIG lists (kubectl's rule: missing ones are ignored). */
const envFiles = () => (process.env.KUBECONFIG ?? '').split(':').filter((p) => p && existsSync(p));

/** Whether decom runs in a pod with a service account's token (the API's last resort, as client-go's). */
const inCluster = () => !!process.env.KUBERNETES_SERVICE_HOST && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token');

/**
 * Where the API is, as a command was told: the file of --kubeconfig, else the
 * inventory's decom_kubeconfig (at most one of the two is set), and the context.
 * Neither file: the rest of KUBECONFIG_ORDER is searched when the API is asked;
 * `context` undefined: the current context.
 */
export interface ApiSource {
  kubeconfig?: string;
  inventoryKubeconfig?: string;
  context?: string;
}

/** What one place holds: kubeconfig files, or the pod's service account. */
type Held = { files: string[] } | { inCluster: true };

/** What each place of KUBECONFIG_ORDER holds for a source, undefined when nothing. */
const HELD_AT: Record<KubeconfigPlace, (s: ApiSource) => Held | undefined> = {
  '--kubeconfig': (s) => (s.kubeconfig ? { files: [flagFile(s.kubeconfig)] } : undefined),
  "the inventory's decom_kubeconfig": (s) => (s.inventoryKubeconfig ? { files: [s.inventoryKubeconfig] } : undefined),
  '$KUBECONFIG': () => {
    const files = envFiles();
    return files.length ? { files } : undefined;
  },
  '~/.kube/config': () => {
    const home = join(homedir(), '.kube', 'config');
    return existsSync(home) ? { files: [home] } : undefined;
  },
  "the pod's service account": () => (inCluster() ? { inCluster: true } : undefined),
};

/**
 * The first place of `order` that holds the API for this source, and what it holds.
 * Undefined when none does: the client library would then silently target
 * http://localhost:8080, which nobody means.
 */
export function findApi(source: ApiSource, order: readonly KubeconfigPlace[] = KUBECONFIG_ORDER): { place: KubeconfigPlace; held: Held } | undefined {
  for (const place of order) {
    const held = HELD_AT[place](source);
    if (held) return { place, held };
  }
  return undefined;
}

/**
 * The API a command works with, from its flags and its inventory: --kubeconfig, else
 * the inventory's decom_kubeconfig (its hosts must agree; not asked when the flag is
 * given); with --context. A file named that does not exist is refused here, before any
 * host is contacted.
 */
export function apiSource(inventoryFile: string, hosts: { vars: Record<string, unknown> }[], flags: { kubeconfig?: string; context?: string }): ApiSource {
  const fromInventory = flags.kubeconfig ? undefined : inventoryKubeconfig(inventoryFile, hosts);
  return {
    ...(flags.kubeconfig ? { kubeconfig: flagFile(flags.kubeconfig) } : {}),
    ...(fromInventory ? { inventoryKubeconfig: fromInventory } : {}),
    ...(flags.context ? { context: flags.context } : {}),
  };
}

/**
 * The kubeconfig files a source loads: those of the first file place of
 * KUBECONFIG_ORDER that has any (its own file, else every existing file of
 * $KUBECONFIG, else ~/.kube/config). None: nothing to load (in a pod, the service
 * account is then the API's).
 */
export function kubeconfigFiles(source: ApiSource): string[] {
  const found = findApi(source, KUBECONFIG_FILES_ORDER);
  return found && 'files' in found.held ? found.held.files : [];
}

/** Where the run's API access comes from, for messages: "FILE", "FILE+FILE", or "in-cluster". */
export type KubeSource = string;

/**
 * A KubeConfig loaded as kubectl loads one, from the first place of KUBECONFIG_ORDER
 * that holds one: its files (several of $KUBECONFIG merged: the first to set a name or
 * the current context wins), or the pod's service account when decom runs in a pod.
 * With the source's context (--context), that context. Loads the
 * client library (~0.4 s): only commands that talk to the API pay for it. Undefined
 * when there is nothing to load.
 */
export async function loadKubeConfig(api: ApiSource) {
  const { context } = api;
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  const found = findApi(api);
  let source: KubeSource;
  if (found && 'files' in found.held) {
    const { files } = found.held;
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
  } else if (found) {
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

/** How decom's requests name themselves in the API server's audit log and metrics (https-api.ts's too). */
export const USER_AGENT = `decom/${VERSION}`;

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
    if (source.context && !inCluster()) throw inputError(`--context ${source.context}: no kubeconfig was found to look for it in (${kubeconfigOrder()})`);
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

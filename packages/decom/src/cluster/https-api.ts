/**
 * The API over plain node:https, without the client library (loading it costs ~0.4 s of
 * CPU): for a kubeconfig whose user is a bearer token (token, tokenFile) or a client
 * certificate, with the cluster's server and CA, and for the pod's service account's
 * token. What the audit's lists ask of the API (audit/cluster.ts); every other kind of
 * credential (exec plugins, auth providers, a username and password, impersonation, a
 * proxy) is the client library's (kubeconfig.ts), and so is every kubeconfig this module
 * does not read cleanly: the library then says what is wrong with it, as before.
 *
 * The answers read as the library's do: a list's items with the model's Date fields
 * (model-times.ts) and its continue token as `_continue`; an error status as the
 * library's ApiException (code, body), a connection error in node-fetch's words, so
 * errorLine and codeOf read both paths alike.
 */
import { readFileSync } from 'node:fs';
import { Agent, request, type AgentOptions } from 'node:https';
import { dirname, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { ApiGet } from './context.js';
import { findApi, USER_AGENT, type ApiSource } from './kubeconfig.js';
import { withModelTimes, type TimedModel } from './model-times.js';
import type { Page, PageRequest } from './pages.js';

/** Where a pod's service account is mounted (client-go's rest.InClusterConfig). */
const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

/** What a request carries: the server, the TLS options, the bearer token. */
export interface PlainCredentials {
  server: string;
  tls: AgentOptions;
  /** Read again on each request when it comes from a file (a projected token rotates), as client-go does. */
  token?: () => string;
}

type Entry = Record<string, unknown>;

/** The user fields this path honours; any other (exec, auth-provider, username, as, …) is the library's. */
const USER_FIELDS = new Set(['token', 'tokenFile', 'client-certificate', 'client-certificate-data', 'client-key', 'client-key-data', 'extensions']);
/** The cluster fields this path honours; any other (proxy-url, …) is the library's. */
const CLUSTER_FIELDS = new Set(['server', 'certificate-authority', 'certificate-authority-data', 'insecure-skip-tls-verify', 'tls-server-name', 'extensions']);

/** A string field, or undefined when absent; anything else (a number, a map) makes the entry not plain. */
const text = (e: Entry, k: string): string | undefined => {
  const v = e[k];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new Error(`${k} is not a string`);
  return v;
};

/** A file's bytes, or base64 data: one of the two, never both (kubectl refuses both). */
function fileOrData(e: Entry, fileKey: string, dataKey: string, dir: string): Buffer | undefined {
  const file = text(e, fileKey);
  const data = text(e, dataKey);
  if (file && data) throw new Error(`both ${fileKey} and ${dataKey}`);
  return file ? readFileSync(resolve(dir, file)) : data ? Buffer.from(data, 'base64') : undefined;
}

/** A token file's token, trimmed as client-go's cached file token source trims it. */
const tokenOf = (file: string) => () => readFileSync(file, 'utf8').trim();

/** The cluster and user of a kubeconfig, as plain credentials; throws when they are not plain. */
function fromEntries(cluster: Entry, clusterDir: string, user: Entry, userDir: string): PlainCredentials {
  if (Object.keys(cluster).some((k) => !CLUSTER_FIELDS.has(k)) || Object.keys(user).some((k) => !USER_FIELDS.has(k))) throw new Error('not plain');
  const server = text(cluster, 'server');
  if (!server?.startsWith('https://')) throw new Error('not https');
  const insecure = cluster['insecure-skip-tls-verify'] === true;
  const ca = fileOrData(cluster, 'certificate-authority', 'certificate-authority-data', clusterDir);
  if (insecure && ca) throw new Error('a CA with insecure-skip-tls-verify'); // kubectl refuses the pair
  const cert = fileOrData(user, 'client-certificate', 'client-certificate-data', userDir);
  const key = fileOrData(user, 'client-key', 'client-key-data', userDir);
  if (!cert !== !key) throw new Error('a certificate without its key');
  // kubectl: with both, the file's token wins while it can be read (client-go's bearer round tripper).
  const inline = text(user, 'token');
  const tokenFile = text(user, 'tokenFile');
  const fromFile = tokenFile ? tokenOf(resolve(userDir, tokenFile)) : undefined;
  if (fromFile) fromFile(); // unreadable: the library's, which says so
  const token = fromFile ?? (inline ? () => inline : undefined);
  if (!cert && !token) throw new Error('no credential');
  const servername = text(cluster, 'tls-server-name');
  return {
    server: server.replace(/\/$/, ''),
    tls: { ...(ca ? { ca } : {}), ...(cert && key ? { cert, key } : {}), ...(insecure ? { rejectUnauthorized: false } : {}), ...(servername ? { servername } : {}) },
    ...(token ? { token } : {}),
  };
}

/**
 * The source's credentials when they are plain (a token or a client certificate, over
 * https): read from the same place loadKubeConfig would load (findApi), merged as it
 * merges several files (the first to name an entry or the current context wins), with
 * the source's context. Undefined: nothing to load, or credentials or a kubeconfig the
 * client library is to handle (it reports what is wrong, as before).
 */
export async function plainCredentials(source: ApiSource): Promise<PlainCredentials | undefined> {
  const found = findApi(source);
  if (!found) return undefined;
  try {
    if (!('files' in found.held)) {
      // The pod's service account: client-go's InClusterConfig, a token file and the cluster's CA.
      const host = process.env.KUBERNETES_SERVICE_HOST ?? '';
      const port = process.env.KUBERNETES_SERVICE_PORT ?? '';
      if (source.context || !port || ['80', '8080', '8001'].includes(port)) return undefined;
      const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
      return fromEntries({ server, 'certificate-authority': `${SERVICE_ACCOUNT}/ca.crt` }, '/', { tokenFile: `${SERVICE_ACCOUNT}/token` }, '/');
    }
    const { parse } = await import('yaml');
    type Named = { name?: unknown; [k: string]: unknown };
    type Held = Map<string, { entry: Entry; dir: string }>;
    let current: string | undefined;
    const [contexts, clusters, users]: Held[] = [new Map(), new Map(), new Map()];
    for (const file of found.held.files) {
      const doc = (parse(readFileSync(file, 'utf8')) ?? {}) as Record<string, unknown>;
      const named = (list: unknown, field: string, into: Held) => {
        for (const n of (Array.isArray(list) ? list : []) as Named[]) {
          if (typeof n?.name !== 'string' || into.has(n.name)) continue;
          const entry = n[field] ?? {};
          if (typeof entry !== 'object') throw new Error(`${field} is not a map`);
          into.set(n.name, { entry: entry as Entry, dir: dirname(file) });
        }
      };
      if (!current && typeof doc['current-context'] === 'string' && doc['current-context']) current = doc['current-context'];
      named(doc.contexts, 'context', contexts as Held);
      named(doc.clusters, 'cluster', clusters as Held);
      named(doc.users, 'user', users as Held);
    }
    const context = contexts?.get(source.context ?? current ?? '')?.entry;
    const cluster = clusters?.get(String(context?.cluster ?? ''));
    const user = users?.get(String(context?.user ?? ''));
    if (!cluster || !user) return undefined;
    return fromEntries(cluster.entry, cluster.dir, user.entry, user.dir);
  } catch {
    return undefined;
  }
}

/** An error status as the client library's ApiException carries it (code, body, headers), worded as it words one. */
export class ApiStatusError extends Error {
  constructor(
    readonly code: number,
    what: string,
    readonly body: string | undefined,
    readonly headers: Record<string, string>,
  ) {
    super(`HTTP-Code: ${code}\nMessage: ${what}\nBody: ${JSON.stringify(body)}\nHeaders: ${JSON.stringify(headers)}`);
    this.name = 'ApiStatusError';
  }
}

/** One response: its status, headers (as the library keeps them: lower-case names, one value each) and text. */
interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** A list's collection path and the model its items deserialize into. */
export interface TypedList {
  path: string;
  model: TimedModel;
}

/** The API over plain HTTPS: a GET of any path as JSON (discovery, metadata-only lists), and a typed list's pages. */
export interface PlainApi {
  server: string;
  get: ApiGet;
  page<T>(list: TypedList, p: PageRequest): Promise<Page<T>>;
  /** Closes the kept-alive connections. */
  close(): void;
}

/** A list page's JSON as the client library's model holds it: items with their Date fields, metadata.continue as `_continue`. */
export function modelPage<T>(doc: { items?: unknown[]; metadata?: { continue?: string } }, model: TimedModel): Page<T> {
  const items = (doc.items ?? []).map((i) => withModelTimes(model, i) as T);
  const next = doc.metadata?.continue;
  return { items, metadata: next ? { _continue: next } : {} };
}

/** The API of plain credentials: one keep-alive agent for every request, decom's User-Agent on each. */
export function plainApi(c: PlainCredentials): PlainApi {
  const agent = new Agent({ keepAlive: true, ...c.tls });
  const send = (url: URL, accept: string): Promise<Answer> =>
    new Promise((done, fail) => {
      const headers: Record<string, string> = { Accept: accept, 'User-Agent': USER_AGENT, 'Accept-Encoding': 'gzip' };
      if (c.token) headers.Authorization = `Bearer ${c.token()}`;
      const req = request(url, { agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (b: Buffer) => chunks.push(b));
        res.on('error', (e) => fail(new Error(`request to ${url.href} failed, reason: ${e.message}`)));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          const answered: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) answered[k] = Array.isArray(v) ? v.join(', ') : v;
          try {
            const body = res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
            done({ status: res.statusCode ?? 0, headers: answered, text: body.toString('utf8') });
          } catch (e) {
            fail(new Error(`request to ${url.href} failed, reason: ${(e as Error).message}`));
          }
        });
      });
      // node-fetch's words for a request that got no answer, as the library's lists say it.
      req.on('error', (e) => fail(new Error(`request to ${url.href} failed, reason: ${e.message}`)));
      req.end();
    });
  const json = (a: Answer, path: string): unknown => {
    try {
      return JSON.parse(a.text) as unknown;
    } catch {
      throw new Error(`GET ${path}: the API answered ${a.headers['content-type'] ?? 'something'} that is not JSON`);
    }
  };
  const urlOf = (path: string, query: Record<string, string>) => {
    const url = new URL(c.server + path);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    return url;
  };
  return {
    server: c.server,
    // As kubeconfig.ts's apiGet: an error status is its Status, worded `GET path`.
    get: async (path, o = {}) => {
      const a = await send(urlOf(path, o.query ?? {}), o.accept ?? 'application/json');
      if (a.status < 200 || a.status > 299) throw new ApiStatusError(a.status, `GET ${path}`, a.text, a.headers);
      return json(a, path);
    },
    // As the typed clients' list calls: the query in their order (continue, then limit); a 401 without its body.
    page: async <T>(list: TypedList, p: PageRequest): Promise<Page<T>> => {
      const a = await send(urlOf(list.path, { ...(p._continue ? { continue: p._continue } : {}), limit: String(p.limit) }), 'application/json');
      if (a.status === 401) throw new ApiStatusError(401, 'Unauthorized', undefined, a.headers);
      if (a.status < 200 || a.status > 299) throw new ApiStatusError(a.status, 'Unknown API Status Code!', a.text, a.headers);
      return modelPage<T>(json(a, list.path) as { items?: unknown[] }, list.model);
    },
    close: () => agent.destroy(),
  };
}

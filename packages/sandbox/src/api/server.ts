/**
 * The sandbox's Kubernetes API: HTTPS with a bearer token, discovery (discovery.ts),
 * and the REST verbs on every resource served (resources.ts servedResources, custom
 * resources included) over the store — list (selectors, limit/continue, Tables,
 * metadata only), watch, get, create, update, patch (JSON, merge, strategic but for
 * custom resources), delete (graceful, finalizers, preconditions), the status
 * subresource, pods/eviction against PodDisruptionBudgets, dryRun=All; an unavailable
 * aggregated group version answered as kube-aggregator's proxy answers it.
 * Judged by real kubectl: what it prints must be what a real cluster makes it print.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { appendFileSync } from 'node:fs';
import { unavailablePath } from './apiservices.js';
import { crdMarkedForDeletion, terminatingCreate } from './crds.js';
import { DISCOVERY_TYPE, KUBERNETES_VERSION, aggregatedDiscovery, apiGroup, apiGroupList, apiResourceList, openApiDoc, openApiRoot } from './discovery.js';
import { ApiError } from './errors.js';
import { apiVersionOf, findResource, storeKey, type Resource } from './resources.js';
import { fieldMatcher, jsonPatch, labelMatcher, mergePatch, strategicMergePatch } from './query.js';
import { microTime, type Obj, type Store, type WatchEvent } from './store.js';
import { customResourcePrinter, toTable } from './tables.js';
import { decodeProtobuf } from './protobuf.js';
import { evict, faultSwitch, pdbStatus, validate, withDefaults } from './behaviour.js';
import { authenticate, authorize, certificateUser, serviceAccountToken } from './rbac.js';

export { KUBERNETES_VERSION };

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface ApiOptions {
  store: Store;
  token: string;
  /**
   * Where each resource request is logged once answered (JSON lines: user, verb, URI,
   * requestReceivedTimestamp, stageTimestamp, responseStatus), as kube-apiserver's
   * audit log; none when undefined.
   */
  auditLog?: string;
  cert: string | Buffer;
  key: string | Buffer;
  /** The CA whose client certificates authenticate their CN as the user and O as its groups (kube-apiserver's --client-ca-file); none when undefined. */
  clientCa?: string | Buffer;
}

function send(res: ServerResponse, code: number, body: unknown, type = 'application/json'): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-cache, private' });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks);
  if (!body.length) return undefined;
  if (String(req.headers['content-type'] ?? '').startsWith('application/vnd.kubernetes.protobuf')) return decodeProtobuf(body);
  const text = body.toString('utf8');
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw ApiError.badRequest(`the request body is not JSON: ${text.slice(0, 80)}`);
  }
}

interface Target {
  r: Resource;
  ns?: string;
  name?: string;
  sub?: string;
}

/** /api/v1/… or /apis/G/V/…: the resource (of those served now), namespace, name and subresource a path names. */
function parseTarget(store: Store, group: string, version: string, parts: string[]): Target | undefined {
  let ns: string | undefined;
  if (parts[0] === 'namespaces' && parts.length >= 3 && findResource(group, version, parts[2] as string, store)?.namespaced) {
    ns = parts[1];
    parts = parts.slice(2);
  }
  const r = findResource(group, version, parts[0] ?? '', store);
  if (!r || parts.length > 3) return undefined;
  return { r, ns, name: parts[1], sub: parts[2] };
}

type Rendering = { as: 'Table'; includeObject: string } | { as: 'PartialObjectMetadata' } | undefined;

/**
 * What the client's Accept asks for, its first media type the server can produce (as
 * apiserver's negotiation): a Table (kubectl get, with how much of each object a row
 * carries), metadata only (client-go's metadata client: PartialObjectMetadataList for a
 * list, PartialObjectMetadata for one object or a watch's events), or the objects.
 */
function rendering(req: IncomingMessage, q: URLSearchParams, list: boolean): Rendering {
  for (const type of String(req.headers.accept ?? '').split(',')) {
    const [media, ...params] = type.split(';').map((x) => x.trim());
    if (media !== 'application/json' && media !== '*/*' && media !== 'application/*') continue;
    const p = Object.fromEntries(params.map((x) => x.split('=').map((y) => y.trim()) as [string, string]));
    if (!p.as) return undefined;
    if (p.g !== 'meta.k8s.io') continue;
    if (p.as === 'Table' && (p.v === 'v1' || p.v === 'v1beta1')) return { as: 'Table', includeObject: q.get('includeObject') ?? 'Metadata' };
    if (p.v === 'v1' && p.as === (list ? 'PartialObjectMetadataList' : 'PartialObjectMetadata')) return { as: 'PartialObjectMetadata' };
  }
  return undefined;
}

/** What a resource's own Delete does first: a CRD's (crds.ts). */
const deletion = (r: Resource) => (r.plural === 'customresourcedefinitions' && !r.crd ? { mark: crdMarkedForDeletion } : {});

const partial = (o: Obj) => ({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata });
const printerOf = (r: Resource) => (r.crd ? customResourcePrinter(r.crd.printerColumns) : storeKey(r));

const listKind = (r: Resource) => `${r.kind}List`;

/**
 * `pods/log`: the container named (or the pod's only one), read from the kubelet of
 * the pod's node at its daemon endpoint, as kube-apiserver proxies it (plain HTTP and
 * the cluster's token here: the kubelet stand-in has no serving certificate).
 */
async function podLog(res: ServerResponse, store: Store, pod: Obj, q: URLSearchParams, token: string): Promise<void> {
  const name = pod.metadata.name;
  const names = (((pod.spec as Any)?.containers ?? []) as Any[]).map((c) => c.name as string);
  const container = q.get('container') ?? (names.length === 1 ? names[0] : undefined);
  if (!container) throw ApiError.badRequest(`a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`);
  if (!names.includes(container)) throw ApiError.badRequest(`container ${container} is not valid for pod ${name}`);
  const node = (pod.spec as Any)?.nodeName as string | undefined;
  const n = node ? (store.find('nodes', undefined, node) as Any | undefined) : undefined;
  const ip = ((n?.status?.addresses ?? []) as Any[]).find((a) => a.type === 'InternalIP')?.address;
  if (!ip) throw ApiError.badRequest(`pod ${name} has no node to read its logs from`);
  const port = n?.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 10250;
  const query = new URLSearchParams([...q].filter(([k]) => ['previous', 'timestamps', 'tailLines'].includes(k)));
  const r = await fetch(`http://${ip}:${port}/containerLogs/${pod.metadata.namespace}/${name}/${container}?${query}`, { headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) }).catch((e: unknown) => {
    throw new ApiError(500, 'InternalError', `Get "https://${ip}:${port}/containerLogs/${pod.metadata.namespace}/${name}/${container}": ${(e as Error).message}`);
  });
  const text = await r.text();
  if (r.status !== 200) throw r.status === 404 ? ApiError.badRequest(text.trim()) : new ApiError(500, 'InternalError', text.trim());
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end(text);
}

export function createApiServer(o: ApiOptions): Server {
  const { store } = o;
  const evictionRefused = faultSwitch(store);
  /** One audit event per request, written once its response is complete (or the client gone), with the audit API's MicroTime stamps. */
  const audit = (res: ServerResponse, requestReceivedTimestamp: string, entry: Record<string, unknown>) => {
    const file = o.auditLog;
    if (!file) return;
    let logged = false;
    const log = () => {
      if (logged) return;
      logged = true;
      appendFileSync(file, `${JSON.stringify({ ...entry, requestReceivedTimestamp, stageTimestamp: microTime(), responseStatus: { code: res.statusCode } })}\n`);
    };
    res.once('finish', log);
    res.once('close', log);
  };

  /** An object as the resource asked for shows it: a custom resource in the version asked (stored once), a budget with its status computed. */
  const present = (r: Resource, x: Obj): Obj => (r.crd ? { ...x, apiVersion: apiVersionOf(r) } : r.plural === 'poddisruptionbudgets' ? { ...x, status: pdbStatus(store, x) } : x);

  const objectsOf = (t: Target, q: URLSearchParams): Obj[] => {
    const labels = labelMatcher(q.get('labelSelector') ?? undefined);
    const fields = fieldMatcher(q.get('fieldSelector') ?? undefined);
    return store
      .list(storeKey(t.r), t.r.namespaced ? t.ns : undefined)
      .filter((x) => labels(x.metadata.labels) && fields(x))
      .map((x) => present(t.r, x));
  };

  // apiserver_request_total as a real API server exports it: what clients asked, by verb and resource.
  const requests = new Map<string, number>();
  // (and, the sandbox's addition, by client: the User-Agent's product, so a benchmark counts one client's requests)
  const count = (verb: string, r: Resource, sub: string | undefined, agent: string) => {
    const client = (/^[^/\s]+/.exec(agent)?.[0] ?? 'unknown').replace(/[^A-Za-z0-9_.-]/g, '_');
    const key = `verb="${verb}",group="${r.group}",version="${r.version}",resource="${r.plural}",subresource="${sub ?? ''}",client="${client}"`;
    requests.set(key, (requests.get(key) ?? 0) + 1);
  };
  const sendMetrics = (res: ServerResponse) => {
    const lines = ['# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, group, version and resource.', '# TYPE apiserver_request_total counter'];
    for (const [k, v] of [...requests].sort()) lines.push(`apiserver_request_total{${k}} ${v}`);
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
    res.end(`${lines.join('\n')}\n`);
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const received = microTime();
    const url = new URL(req.url ?? '/', 'https://sandbox');
    const q = url.searchParams;
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const accept = String(req.headers.accept ?? '');
    if (path === '/healthz' || path === '/livez' || path === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok');
      return;
    }
    if (path === '/version') return send(res, 200, KUBERNETES_VERSION);
    const user = certificateUser(req.socket as TLSSocket) ?? authenticate(store, o.token, req.headers.authorization);
    if (!user) throw new ApiError(401, 'Unauthorized', 'Unauthorized');
    if (path === '/metrics') return sendMetrics(res);

    // Discovery, and what kube-aggregator answers for an unavailable group: logged as kube-apiserver's audit
    // logs a request of a non-resource URL (verb get), so a client's whole conversation is in the log.
    const agent = String(req.headers['user-agent'] ?? '');
    if (path === '/api' || path === '/apis' || /^\/api\/v1$|^\/apis\/[^/]+(\/[^/]+)?$|^\/openapi\//.test(path) || unavailablePath(store, path)) {
      audit(res, received, { user: user.name, userAgent: agent, verb: String(req.method).toLowerCase(), requestURI: req.url });
    }
    const aggregated = accept.includes('as=APIGroupDiscoveryList');
    if (path === '/api') {
      if (aggregated) return send(res, 200, aggregatedDiscovery(store, true), DISCOVERY_TYPE);
      return send(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: String(req.headers.host ?? '') }] });
    }
    if (path === '/apis') {
      if (aggregated) return send(res, 200, aggregatedDiscovery(store, false), DISCOVERY_TYPE);
      return send(res, 200, apiGroupList(store));
    }
    if (path === '/openapi/v3') return send(res, 200, openApiRoot(store));
    const oa = /^\/openapi\/v3\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))$/.exec(path);
    const doc = oa && openApiDoc(store, oa[2] ?? '', (oa[1] ?? oa[3]) as string);
    if (doc) return send(res, 200, doc);
    // kube-aggregator's proxy for an APIService that is not available: a plain-text 503 (client-go makes it
    // "the server is currently unable to handle the request", reason ServiceUnavailable, the body its cause).
    if (unavailablePath(store, path)) {
      res.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
      res.end('service unavailable\n');
      return;
    }
    let m = /^\/apis\/([^/]+)$/.exec(path);
    const groupDoc = m && apiGroup(store, m[1] as string);
    if (groupDoc) return send(res, 200, groupDoc);
    m = /^\/api\/(v1)$/.exec(path) ?? /^\/apis\/([^/]+\/[^/]+)$/.exec(path);
    const list = m && apiResourceList(store, path.startsWith('/api/') ? '' : ((m[1] as string).split('/')[0] as string), (m[1] as string).split('/').pop() as string);
    if (list) return send(res, 200, list);

    m = /^\/api\/v1\/(.+)$/.exec(path) ?? /^\/apis\/([^/]+)\/([^/]+)\/(.+)$/.exec(path);
    const [group, version, rest] = path.startsWith('/api/') ? ['', 'v1', (m?.[1] ?? '') as string] : [(m?.[1] ?? '') as string, (m?.[2] ?? '') as string, (m?.[3] ?? '') as string];
    const t = m ? parseTarget(store, group, version, rest.split('/').map(decodeURIComponent)) : undefined;
    if (!t) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    const { r } = t;
    const watching = q.get('watch') === 'true' || q.get('watch') === '1';
    const verb = { GET: t.name ? 'get' : watching ? 'watch' : 'list', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: t.name ? 'delete' : 'deletecollection' }[String(req.method)] ?? String(req.method).toLowerCase();
    // Logged before it is authorized (refused requests too); an eviction with its request object (an audit
    // policy's Request level): what it asked for, grace period included.
    const evictionBody = t.sub === 'eviction' && req.method === 'POST' ? ((await readBody(req)) as Any | undefined) : undefined;
    audit(res, received, { user: user.name, userAgent: agent, verb, requestURI: req.url, ...(evictionBody ? { requestObject: evictionBody } : {}) });
    // A namespace's own requests are in that namespace (a RoleBinding there may allow them), as kube-apiserver scopes them.
    const scope = t.ns ?? (r.plural === 'namespaces' ? t.name : undefined);
    authorize(store, user, { verb, group: r.group, resource: r.plural, ...(t.sub ? { subresource: t.sub } : {}), ...(scope ? { namespace: scope } : {}), ...(t.name ? { name: t.name } : {}) });
    count(req.method === 'GET' ? (t.name ? 'GET' : q.get('watch') === 'true' || q.get('watch') === '1' ? 'WATCH' : 'LIST') : String(req.method), r, t.sub, String(req.headers['user-agent'] ?? ''));
    const dryRun = q.get('dryRun') === 'All';
    // An aggregated group's read-only resources (metrics) serve get and list alone.
    if (r.verbs && !r.verbs.includes(verb)) throw new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', { group: r.group, kind: r.plural });
    const key = storeKey(r);

    if (r.namespaced && t.ns && !store.find('namespaces', undefined, t.ns) && req.method !== 'GET') {
      throw ApiError.notFound('namespaces', t.ns);
    }

    // Collections.
    if (!t.name) {
      if (req.method === 'GET') {
        if (q.get('watch') === 'true' || q.get('watch') === '1') return watch(req, res, t, q);
        if (q.has('sendInitialEvents')) throw invalidOptions([{ field: 'sendInitialEvents', message: 'sendInitialEvents is forbidden for list' }]);
        let items = objectsOf(t, q);
        const limit = Number(q.get('limit') ?? 0);
        const cont = q.get('continue');
        let start = 0;
        if (cont) {
          try {
            start = (JSON.parse(Buffer.from(cont, 'base64').toString()) as { start: number }).start;
          } catch {
            throw ApiError.badRequest('continue key is not valid');
          }
        }
        const total = items.length;
        items = items.slice(start, limit > 0 ? start + limit : undefined);
        const next = limit > 0 && start + limit < total ? Buffer.from(JSON.stringify({ start: start + limit })).toString('base64') : undefined;
        const meta = { resourceVersion: store.resourceVersion, ...(next ? { continue: next, remainingItemCount: total - start - limit } : {}) };
        const as = rendering(req, q, true);
        if (as?.as === 'Table') return send(res, 200, toTable(printerOf(r), items, meta, as.includeObject));
        if (as?.as === 'PartialObjectMetadata') return send(res, 200, { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: meta, items: items.map(partial) });
        return send(res, 200, { kind: listKind(r), apiVersion: apiVersionOf(r), metadata: meta, items });
      }
      if (req.method === 'POST') {
        const body = (await readBody(req)) as Obj | undefined;
        if (r.crd?.terminating) throw terminatingCreate(r);
        const obj = validate(store, r, withDefaults(r, body, t.ns), t.ns);
        // The token controller fills a ServiceAccount's token Secret (not on a dry run): valid while the Secret and its account are.
        if (r.plural === 'secrets' && obj.type === 'kubernetes.io/service-account-token' && !dryRun) {
          const ns = obj.metadata.namespace as string;
          const sa = store.find('serviceaccounts', ns, obj.metadata.annotations?.['kubernetes.io/service-account.name'] ?? '');
          if (sa) {
            const token = serviceAccountToken(o.token, { ns, name: sa.metadata.name, uid: sa.metadata.uid as string, secret: obj.metadata.name });
            obj.data = { ...(obj.data as Record<string, string> | undefined), token: Buffer.from(token).toString('base64'), namespace: Buffer.from(ns).toString('base64') };
          }
        }
        if (dryRun) return send(res, 201, { ...obj, metadata: { ...obj.metadata, uid: obj.metadata.uid ?? '', creationTimestamp: new Date().toISOString() } });
        return send(res, 201, present(r, store.create(key, obj, r.group)));
      }
      if (req.method === 'DELETE') {
        const gone = objectsOf(t, q).map((x) => present(r, store.delete(key, x.metadata.namespace, x.metadata.name, r.group, deletion(r))));
        return send(res, 200, { kind: listKind(r), apiVersion: apiVersionOf(r), metadata: { resourceVersion: store.resourceVersion }, items: gone });
      }
      throw new ApiError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
    }

    // One object, or its subresource.
    const name = t.name;
    if (t.sub === 'eviction') {
      if (req.method !== 'POST') throw new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      const body = evictionBody;
      if (evictionRefused()) {
        res.writeHead(429, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Retry-After': '1' });
        res.end('Too many requests, please try again later.\n');
        return;
      }
      // kubectl drain --dry-run=server says so in the Eviction's deleteOptions, not in the query.
      return send(res, 201, evict(store, t.ns as string, name, body, dryRun || (body?.deleteOptions?.dryRun ?? []).includes('All')));
    }
    if (t.sub === 'log' && r.plural === 'pods') {
      if (req.method !== 'GET') throw new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      return podLog(res, store, store.get('pods', t.ns, name, ''), q, o.token);
    }
    if (t.sub === 'token' && r.plural === 'serviceaccounts') {
      if (req.method !== 'POST') throw new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      const body = (await readBody(req)) as Any | undefined;
      const sa = store.get('serviceaccounts', t.ns, name, '');
      const seconds = Number(body?.spec?.expirationSeconds ?? 3600);
      // --service-account-extend-token-expiration (on by default): the admission's 3607 s token, which the
      // kubelet would refresh, is valid for a year, so a pod that outlives the hour keeps working.
      const expires = Math.floor(Date.now() / 1000) + (seconds === 3607 ? 365 * 24 * 3600 : seconds);
      return send(res, 201, {
        kind: 'TokenRequest', apiVersion: 'authentication.k8s.io/v1', metadata: { name, namespace: t.ns, creationTimestamp: new Date().toISOString() },
        spec: { audiences: ['https://kubernetes.default.svc'], ...body?.spec, expirationSeconds: seconds },
        status: { token: serviceAccountToken(o.token, { ns: t.ns as string, name, uid: sa.metadata.uid as string, expires }), expirationTimestamp: new Date(expires * 1000).toISOString() },
      });
    }
    if (t.sub && !r.subresources?.some((s) => s.name === t.sub)) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    if (req.method === 'GET') {
      const obj = present(r, store.get(key, t.ns, name, r.group));
      const as = rendering(req, q, false);
      if (as?.as === 'Table') return send(res, 200, toTable(printerOf(r), [obj], { resourceVersion: obj.metadata.resourceVersion }, as.includeObject));
      if (as?.as === 'PartialObjectMetadata') return send(res, 200, partial(obj));
      return send(res, 200, obj);
    }
    if (req.method === 'PUT' || req.method === 'PATCH') {
      const body = await readBody(req);
      // Read after the body: from here on nothing awaits, so no other write comes between read and update.
      const cur = store.get(key, t.ns, name, r.group);
      let next: Obj;
      if (req.method === 'PUT') next = body as Obj;
      else {
        const type = String(req.headers['content-type'] ?? '').split(';')[0];
        if (type === 'application/json-patch+json') next = jsonPatch(cur, body) as Obj;
        else if (type === 'application/merge-patch+json') next = mergePatch(cur, body) as Obj;
        else if (type === 'application/strategic-merge-patch+json' && !r.crd) next = strategicMergePatch(cur, body) as Obj;
        // Custom resources have no Go types to merge strategically by: the crdHandler offers JSON, merge and apply patches.
        else if (r.crd) throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`);
        else throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json`);
        // A patch does not carry the version it was made from unless it says so.
        if (!(body as Any)?.metadata?.resourceVersion) next.metadata.resourceVersion = cur.metadata.resourceVersion;
      }
      if (!next || typeof next !== 'object') throw ApiError.badRequest('the request body is not an object');
      next.metadata = { ...(next.metadata ?? {}), name, ...(t.ns ? { namespace: t.ns } : {}) } as Obj['metadata'];
      // The main resource ignores status; the status subresource changes only status; finalize only spec.finalizers.
      if (t.sub === 'status') next = { ...cur, status: next.status, metadata: { ...cur.metadata, resourceVersion: next.metadata.resourceVersion } };
      else if (t.sub === 'finalize') next = { ...cur, spec: { ...cur.spec, finalizers: (next.spec as Any | undefined)?.finalizers ?? [] }, metadata: { ...cur.metadata, resourceVersion: next.metadata.resourceVersion } };
      else if (r.subresources?.some((s) => s.name === 'status') && r.plural !== 'namespaces') next = { ...next, ...(cur.status !== undefined ? { status: cur.status } : {}) };
      const valid = validate(store, r, { ...next, apiVersion: apiVersionOf(r), kind: r.kind }, t.ns);
      if (dryRun) return send(res, 200, valid);
      return send(res, 200, present(r, store.update(key, valid, r.group)));
    }
    if (req.method === 'DELETE') {
      const body = ((await readBody(req)) ?? {}) as Any;
      const grace = q.get('gracePeriodSeconds') ?? body.gracePeriodSeconds;
      const opts = {
        ...(grace !== undefined && grace !== null ? { gracePeriodSeconds: Number(grace) } : {}),
        ...(body.preconditions?.uid ? { uid: body.preconditions.uid } : {}),
        ...(body.preconditions?.resourceVersion ? { resourceVersion: body.preconditions.resourceVersion } : {}),
        ...deletion(r),
      };
      if (dryRun || (body.dryRun ?? []).includes('All')) return send(res, 200, present(r, store.get(key, t.ns, name, r.group)));
      return send(res, 200, present(r, store.delete(key, t.ns, name, r.group, opts)));
    }
    throw new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
  }

  /** Query options the server refuses, as one 422 Invalid whose causes name each field (apimachinery's wording). */
  function invalidOptions(errors: { field: string; message: string }[]): ApiError {
    const each = errors.map((e) => `${e.field}: Forbidden: ${e.message}`);
    return new ApiError(422, 'Invalid', `ListOptions.meta.k8s.io "" is invalid: ${each.length === 1 ? each[0] : `[${each.join(', ')}]`}`, {
      group: 'meta.k8s.io', kind: 'ListOptions', causes: errors.map((e) => ({ reason: 'FieldValueForbidden', message: `Forbidden: ${e.message}`, field: e.field })),
    });
  }

  /**
   * A watch: the current objects (or the events since resourceVersion), then every
   * change, one JSON per line. With a selector, an object that comes to match is ADDED
   * and one that stops matching is DELETED, as the watch cache does. A resourceVersion
   * no longer kept is an ERROR event carrying 410 Expired, on a 200 stream, as the real
   * server sends it (informers then list again).
   *
   * A watch-list (`sendInitialEvents=true`, what client-go's WatchListClient asks
   * instead of a list, on by default since kubectl 1.35): the current objects as ADDED
   * events whatever the resourceVersion (NotOlderThan: the store is never older), then a
   * BOOKMARK of the resource's kind carrying the store's resourceVersion and the
   * annotation `k8s.io/initial-events-end: "true"`, which ends the client's initial list.
   */
  function watch(req: IncomingMessage, res: ServerResponse, t: Target, q: URLSearchParams): void {
    const labels = labelMatcher(q.get('labelSelector') ?? undefined);
    const fields = fieldMatcher(q.get('fieldSelector') ?? undefined);
    const as = rendering(req, q, false);
    const rv = q.get('resourceVersion');
    // sendInitialEvents, true or false, needs both (apimachinery's ValidateListOptions); false: no initial events.
    const sendInitialEvents = q.get('sendInitialEvents');
    const initialEvents = sendInitialEvents === 'true';
    if (sendInitialEvents !== null) {
      const errors = [
        ...(q.get('resourceVersionMatch') !== 'NotOlderThan' ? [{ field: 'resourceVersionMatch', message: 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan' }] : []),
        ...(q.get('allowWatchBookmarks') !== 'true' ? [{ field: 'allowWatchBookmarks', message: 'sendInitialEvents requires setting allowWatchBookmarks to true' }] : []),
      ];
      if (errors.length) throw invalidOptions(errors);
    }
    const key = storeKey(t.r);
    const inScope = (e: WatchEvent) => e.resource === key && (!t.r.namespaced || !t.ns || e.object.metadata.namespace === t.ns);
    const matches = (o: Obj | undefined) => o !== undefined && labels(o.metadata.labels) && fields(o);
    const backlog = sendInitialEvents === 'false' ? (rv ? store.since(Number(rv)) : []) : initialEvents || !rv || rv === '0' ? store.list(key, t.r.namespaced ? t.ns : undefined).map((object) => ({ type: 'ADDED' as const, resource: key, object })) : store.since(Number(rv));
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
    // Now, not with the first event: a client waits for the headers (kubectl wait on a quiet object would hang).
    res.flushHeaders();
    if (!backlog) {
      const gone = new ApiError(410, 'Expired', `too old resource version: ${rv} (${store.resourceVersion})`);
      res.end(`${JSON.stringify({ type: 'ERROR', object: gone.status() })}\n`);
      return;
    }
    let first = true;
    const write = (e: WatchEvent) => {
      if (!inScope(e)) return;
      const now = matches(e.object);
      const before = e.type === 'MODIFIED' && e.old ? matches(e.old) : now;
      const type = now && !before ? 'ADDED' : !now && before ? 'DELETED' : now ? e.type : undefined;
      if (!type) return;
      const obj = present(t.r, e.object);
      const object = as?.as === 'Table' ? toTable(printerOf(t.r), [obj], { resourceVersion: obj.metadata.resourceVersion }, as.includeObject, first) : as?.as === 'PartialObjectMetadata' ? partial(obj) : obj;
      first = false;
      res.write(`${JSON.stringify({ type, object })}\n`);
    };
    backlog.forEach(write);
    if (initialEvents) {
      const metadata = { resourceVersion: store.resourceVersion, annotations: { 'k8s.io/initial-events-end': 'true' } };
      const kind = as?.as === 'PartialObjectMetadata' ? { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1' } : { kind: t.r.kind, apiVersion: apiVersionOf(t.r) };
      res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { ...kind, metadata } })}\n`);
    }
    const stop = store.watch(write);
    const timeout = Number(q.get('timeoutSeconds') ?? 1800);
    const timer = setTimeout(() => res.end(), timeout * 1000);
    const end = () => {
      stop();
      clearTimeout(timer);
    };
    res.on('close', end);
    req.on('close', end);
  }

  // A client certificate is asked for, never required: a bearer token authenticates the rest.
  const clientAuth = o.clientCa ? { ca: o.clientCa, requestCert: true, rejectUnauthorized: false } : {};
  return createServer({ cert: o.cert, key: o.key, ...clientAuth }, (req, res) => {
    handle(req, res).catch((e: unknown) => {
      const err = e instanceof ApiError ? e : new ApiError(500, 'InternalError', `Internal error occurred: ${(e as Error).message}`);
      if (res.headersSent) res.end();
      else send(res, err.code, err.status());
    });
  });
}

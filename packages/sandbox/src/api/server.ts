/**
 * The sandbox's Kubernetes API: HTTPS with a bearer token, discovery (aggregated v2
 * and the plain lists), and the REST verbs on every resource of resources.ts over the
 * store — list (selectors, limit/continue, Tables), watch, get, create, update,
 * patch (JSON, merge, strategic), delete (graceful, finalizers, preconditions), the
 * status subresource, pods/eviction against PodDisruptionBudgets, dryRun=All.
 * Judged by real kubectl: what it prints must be what a real cluster makes it print.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { appendFileSync } from 'node:fs';
import { ApiError } from './errors.js';
import { GROUPS, RESOURCES, VERBS, apiVersionOf, findResource, type Resource } from './resources.js';
import { fieldMatcher, jsonPatch, labelMatcher, mergePatch, strategicMergePatch } from './query.js';
import type { Obj, Store, WatchEvent } from './store.js';
import { toTable } from './tables.js';
import { decodeProtobuf } from './protobuf.js';
import { evict, faultSwitch, pdbStatus, validate, withDefaults } from './behaviour.js';
import { authenticate, authorize, serviceAccountToken } from './rbac.js';

export const KUBERNETES_VERSION = { major: '1', minor: '32', gitVersion: 'v1.32.4', gitCommit: '59526cd4867447956156ae3a602fcbac10f2c335', gitTreeState: 'clean', buildDate: '2025-04-22T16:02:27Z', goVersion: 'go1.23.6', compiler: 'gc', platform: 'linux/amd64' };

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface ApiOptions {
  store: Store;
  token: string;
  /** Where each request is logged (JSON lines: user, verb, URI), as kube-apiserver's audit log; none when undefined. */
  auditLog?: string;
  cert: string | Buffer;
  key: string | Buffer;
}

const DISCOVERY_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

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

/** Aggregated discovery of one group (the core group is "" under /api). */
function discoveryGroup(group: string): Any {
  const resources = RESOURCES.filter((r) => r.group === group);
  return {
    metadata: { name: group, creationTimestamp: null },
    versions: [
      {
        version: 'v1',
        resources: resources.map((r) => ({
          resource: r.plural,
          responseKind: { group: r.group, version: r.version, kind: r.kind },
          scope: r.namespaced ? 'Namespaced' : 'Cluster',
          singularResource: r.singular,
          verbs: VERBS,
          ...(r.shortNames ? { shortNames: r.shortNames } : {}),
          ...(r.categories ? { categories: r.categories } : {}),
          ...(r.subresources
            ? { subresources: r.subresources.map((s) => ({ subresource: s.name, responseKind: { group: s.group ?? r.group, version: s.version ?? r.version, kind: s.kind }, verbs: s.verbs })) }
            : {}),
        })),
        freshness: 'Current',
      },
    ],
  };
}

function resourceList(group: string): Any {
  const list: Any[] = [];
  for (const r of RESOURCES.filter((x) => x.group === group)) {
    list.push({ name: r.plural, singularName: r.singular, namespaced: r.namespaced, kind: r.kind, verbs: VERBS, ...(r.shortNames ? { shortNames: r.shortNames } : {}), ...(r.categories ? { categories: r.categories } : {}) });
    for (const s of r.subresources ?? []) {
      list.push({ name: `${r.plural}/${s.name}`, singularName: '', namespaced: r.namespaced, ...(s.group !== undefined ? { group: s.group, version: s.version } : {}), kind: s.kind, verbs: s.verbs });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/v1` : 'v1', resources: list };
}

/** OpenAPI v3's root: one document per group/version. */
const openApiRoot = () => ({
  paths: Object.fromEntries(['', ...GROUPS].map((g) => [g ? `apis/${g}/v1` : 'api/v1', { serverRelativeURL: `/openapi/v3/${g ? `apis/${g}/v1` : 'api/v1'}?hash=${KUBERNETES_VERSION.gitCommit.slice(0, 16).toUpperCase()}` }])),
});

/**
 * One group/version's OpenAPI v3 document: its paths and operations, without schemas.
 * kubectl reads it to learn that the server validates fields itself (the PATCH
 * operation of a kind taking `fieldValidation`), and then validates nothing on its side.
 */
function openApiDoc(group: string): Any {
  const paths: Any = {};
  const param = (name: string) => ({ name, in: 'query', schema: { type: 'string', uniqueItems: true } });
  for (const r of RESOURCES.filter((x) => x.group === group)) {
    const gvk = { 'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.kind } };
    const base = `/${r.group ? `apis/${r.group}` : 'api'}/${r.version}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.plural}`;
    const op = (action: string, extra: Any[] = []) => ({ operationId: `${action}${r.kind}`, parameters: extra, responses: {}, 'x-kubernetes-action': action, ...gvk });
    paths[base] = { get: op('list'), post: op('post', [param('dryRun'), param('fieldManager'), param('fieldValidation')]), delete: op('deletecollection') };
    paths[`${base}/{name}`] = {
      get: op('get'),
      put: op('put', [param('dryRun'), param('fieldManager'), param('fieldValidation')]),
      patch: op('patch', [param('dryRun'), param('fieldManager'), param('fieldValidation'), param('force')]),
      delete: op('delete', [param('dryRun'), param('gracePeriodSeconds')]),
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: KUBERNETES_VERSION.gitVersion }, paths, components: { schemas: {} } };
}

const groupInfo = (g: string) => ({ name: g, versions: [{ groupVersion: `${g}/v1`, version: 'v1' }], preferredVersion: { groupVersion: `${g}/v1`, version: 'v1' } });

interface Target {
  r: Resource;
  ns?: string;
  name?: string;
  sub?: string;
}

/** /api/v1/… or /apis/G/V/…: the resource, namespace, name and subresource a path names. */
function parseTarget(group: string, version: string, parts: string[]): Target | undefined {
  let ns: string | undefined;
  if (parts[0] === 'namespaces' && parts.length >= 3 && findResource(group, version, parts[2] as string)?.namespaced) {
    ns = parts[1];
    parts = parts.slice(2);
  }
  const r = findResource(group, version, parts[0] ?? '');
  if (!r || parts.length > 3) return undefined;
  return { r, ns, name: parts[1], sub: parts[2] };
}

/** Whether the client asked for a Table (kubectl get) and how much of each object it wants in a row. */
function tableWanted(req: IncomingMessage, q: URLSearchParams): { includeObject: string } | undefined {
  const accept = String(req.headers.accept ?? '');
  return /as=Table/.test(accept) ? { includeObject: q.get('includeObject') ?? 'Metadata' } : undefined;
}

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
  const audit = (entry: Record<string, unknown>) => {
    if (o.auditLog) appendFileSync(o.auditLog, `${JSON.stringify(entry)}\n`);
  };

  const objectsOf = (t: Target, q: URLSearchParams): Obj[] => {
    const labels = labelMatcher(q.get('labelSelector') ?? undefined);
    const fields = fieldMatcher(q.get('fieldSelector') ?? undefined);
    return store
      .list(t.r.plural, t.r.namespaced ? t.ns : undefined)
      .filter((x) => labels(x.metadata.labels) && fields(x))
      .map((x) => (t.r.plural === 'poddisruptionbudgets' ? { ...x, status: pdbStatus(store, x) } : x));
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
    const user = authenticate(store, o.token, req.headers.authorization);
    if (!user) throw new ApiError(401, 'Unauthorized', 'Unauthorized');
    if (path === '/metrics') return sendMetrics(res);

    // Discovery.
    const aggregated = accept.includes('as=APIGroupDiscoveryList');
    if (path === '/api') {
      if (aggregated) return send(res, 200, { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [discoveryGroup('')] }, DISCOVERY_TYPE);
      return send(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: String(req.headers.host ?? '') }] });
    }
    if (path === '/apis') {
      if (aggregated) return send(res, 200, { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: GROUPS.map(discoveryGroup) }, DISCOVERY_TYPE);
      return send(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: GROUPS.map(groupInfo) });
    }
    if (path === '/api/v1') return send(res, 200, resourceList(''));
    if (path === '/openapi/v3') return send(res, 200, openApiRoot());
    const oa = /^\/openapi\/v3\/(api\/v1|apis\/[^/]+\/v1)$/.exec(path);
    if (oa) return send(res, 200, openApiDoc(oa[1] === 'api/v1' ? '' : (oa[1] as string).split('/')[1] as string));
    let m = /^\/apis\/([^/]+)(?:\/(v1))?$/.exec(path);
    if (m && GROUPS.includes(m[1] as string)) {
      return m[2] ? send(res, 200, resourceList(m[1] as string)) : send(res, 200, { kind: 'APIGroup', apiVersion: 'v1', ...groupInfo(m[1] as string) });
    }

    m = /^\/api\/v1\/(.+)$/.exec(path) ?? /^\/apis\/([^/]+\/v1)\/(.+)$/.exec(path);
    const [group, rest] = path.startsWith('/api/') ? ['', (m?.[1] ?? '') as string] : [(m?.[1] ?? '').replace(/\/v1$/, ''), (m?.[2] ?? '') as string];
    const t = m ? parseTarget(group, 'v1', rest.split('/').map(decodeURIComponent)) : undefined;
    if (!t) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    const { r } = t;
    const watching = q.get('watch') === 'true' || q.get('watch') === '1';
    const verb = { GET: t.name ? 'get' : watching ? 'watch' : 'list', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: t.name ? 'delete' : 'deletecollection' }[String(req.method)] ?? String(req.method).toLowerCase();
    // Logged before it is authorized (refused requests too); an eviction with its request object (an audit
    // policy's Request level): what it asked for, grace period included.
    const agent = String(req.headers['user-agent'] ?? '');
    const evictionBody = t.sub === 'eviction' && req.method === 'POST' ? ((await readBody(req)) as Any | undefined) : undefined;
    audit({ user: user.name, userAgent: agent, verb, requestURI: req.url, ...(evictionBody ? { requestObject: evictionBody } : {}) });
    // A namespace's own requests are in that namespace (a RoleBinding there may allow them), as kube-apiserver scopes them.
    const scope = t.ns ?? (r.plural === 'namespaces' ? t.name : undefined);
    authorize(store, user, { verb, group: r.group, resource: r.plural, ...(t.sub ? { subresource: t.sub } : {}), ...(scope ? { namespace: scope } : {}), ...(t.name ? { name: t.name } : {}) });
    count(req.method === 'GET' ? (t.name ? 'GET' : q.get('watch') === 'true' || q.get('watch') === '1' ? 'WATCH' : 'LIST') : String(req.method), r, t.sub, String(req.headers['user-agent'] ?? ''));
    const dryRun = q.get('dryRun') === 'All';

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
        const table = tableWanted(req, q);
        if (table) return send(res, 200, toTable(r.plural, items, meta, table.includeObject));
        return send(res, 200, { kind: listKind(r), apiVersion: apiVersionOf(r), metadata: meta, items });
      }
      if (req.method === 'POST') {
        const body = (await readBody(req)) as Obj | undefined;
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
        return send(res, 201, store.create(r.plural, obj, r.group));
      }
      if (req.method === 'DELETE') {
        const gone = objectsOf(t, q).map((x) => store.delete(r.plural, x.metadata.namespace, x.metadata.name, r.group));
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
      let obj = store.get(r.plural, t.ns, name, r.group);
      if (r.plural === 'poddisruptionbudgets') obj = { ...obj, status: pdbStatus(store, obj) };
      const table = tableWanted(req, q);
      if (table) return send(res, 200, toTable(r.plural, [obj], { resourceVersion: obj.metadata.resourceVersion }, table.includeObject));
      return send(res, 200, obj);
    }
    if (req.method === 'PUT' || req.method === 'PATCH') {
      const body = await readBody(req);
      // Read after the body: from here on nothing awaits, so no other write comes between read and update.
      const cur = store.get(r.plural, t.ns, name, r.group);
      let next: Obj;
      if (req.method === 'PUT') next = body as Obj;
      else {
        const type = String(req.headers['content-type'] ?? '').split(';')[0];
        if (type === 'application/json-patch+json') next = jsonPatch(cur, body) as Obj;
        else if (type === 'application/merge-patch+json') next = mergePatch(cur, body) as Obj;
        else if (type === 'application/strategic-merge-patch+json') next = strategicMergePatch(cur, body) as Obj;
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
      return send(res, 200, store.update(r.plural, valid, r.group));
    }
    if (req.method === 'DELETE') {
      const body = ((await readBody(req)) ?? {}) as Any;
      const grace = q.get('gracePeriodSeconds') ?? body.gracePeriodSeconds;
      const opts = {
        ...(grace !== undefined && grace !== null ? { gracePeriodSeconds: Number(grace) } : {}),
        ...(body.preconditions?.uid ? { uid: body.preconditions.uid } : {}),
        ...(body.preconditions?.resourceVersion ? { resourceVersion: body.preconditions.resourceVersion } : {}),
      };
      if (dryRun || (body.dryRun ?? []).includes('All')) return send(res, 200, store.get(r.plural, t.ns, name, r.group));
      return send(res, 200, store.delete(r.plural, t.ns, name, r.group, opts));
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
    const table = tableWanted(req, q);
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
    const inScope = (e: WatchEvent) => e.resource === t.r.plural && (!t.r.namespaced || !t.ns || e.object.metadata.namespace === t.ns);
    const matches = (o: Obj | undefined) => o !== undefined && labels(o.metadata.labels) && fields(o);
    const backlog = sendInitialEvents === 'false' ? (rv ? store.since(Number(rv)) : []) : initialEvents || !rv || rv === '0' ? store.list(t.r.plural, t.r.namespaced ? t.ns : undefined).map((object) => ({ type: 'ADDED' as const, resource: t.r.plural, object })) : store.since(Number(rv));
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
      const object = table ? toTable(t.r.plural, [e.object], { resourceVersion: e.object.metadata.resourceVersion }, table.includeObject, first) : e.object;
      first = false;
      res.write(`${JSON.stringify({ type, object })}\n`);
    };
    backlog.forEach(write);
    if (initialEvents) {
      const apiVersion = t.r.group ? `${t.r.group}/${t.r.version}` : t.r.version;
      const metadata = { resourceVersion: store.resourceVersion, annotations: { 'k8s.io/initial-events-end': 'true' } };
      res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { kind: t.r.kind, apiVersion, metadata } })}\n`);
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

  return createServer({ cert: o.cert, key: o.key }, (req, res) => {
    handle(req, res).catch((e: unknown) => {
      const err = e instanceof ApiError ? e : new ApiError(500, 'InternalError', `Internal error occurred: ${(e as Error).message}`);
      if (res.headersSent) res.end();
      else send(res, err.code, err.status());
    });
  });
}

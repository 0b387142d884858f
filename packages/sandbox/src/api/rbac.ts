/**
 * Who a request is and what it may do, as kube-apiserver decides it: the admin token
 * is cluster-admin (system:masters); a client certificate the API's CA signed is its
 * subject (CN the user, O the groups); a ServiceAccount's token (issued through
 * TokenRequest, or filled into a `kubernetes.io/service-account-token` Secret) is
 * `system:serviceaccount:NS:NAME`, judged by the stored Roles, ClusterRoles and their
 * bindings (RBAC's rules: verbs, apiGroups, resources with subresources, resourceNames),
 * with discovery open to every authenticated user. A refusal is the real 403 Status.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { ApiError } from './errors.js';
import type { Obj, Store } from './store.js';

export interface User {
  name: string;
  groups: string[];
}

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ADMIN: User = { name: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] };
const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** What a ServiceAccount token stands for: the account (by uid: a recreated account's old tokens fail) and its lifetime. */
export interface TokenClaims {
  ns: string;
  name: string;
  uid: string;
  /** Seconds since the epoch (a TokenRequest's); a Secret's token has none but lives as long as the Secret. */
  expires?: number;
  secret?: string;
}

/**
 * A ServiceAccount's token: opaque here (a real one is a signed JWT), its claims MACed
 * with the admin token, so it outlives an API restart and cannot be forged without it.
 */
const mac = (adminToken: string, payload: string) => createHmac('sha256', adminToken).update(payload).digest('hex').slice(0, 40);

export function serviceAccountToken(adminToken: string, claims: TokenClaims): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `sandbox-sa.${payload}.${mac(adminToken, payload)}`;
}

/**
 * The user of a client certificate the API's client CA signed, if the request came with
 * one, as kube-apiserver's x509 authenticator reads it (and asks before any token): the
 * subject's CN is the user, each O a group.
 */
export function certificateUser(socket: TLSSocket): User | undefined {
  if (!socket.authorized) return undefined;
  const subject = socket.getPeerCertificate()?.subject;
  if (!subject?.CN) return undefined;
  const orgs = ([] as string[]).concat(subject.O ?? []);
  return { name: String(subject.CN), groups: [...orgs, 'system:authenticated'] };
}

/** The user a bearer token names, if any: the admin, or a ServiceAccount whose token is still valid. */
export function authenticate(store: Store, adminToken: string, header: string | undefined): User | undefined {
  const token = /^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '';
  if (!token) return undefined;
  if (same(token, adminToken)) return ADMIN;
  const m = /^sandbox-sa\.([A-Za-z0-9_-]+)\.([0-9a-f]{40})$/.exec(token);
  if (!m || !same(m[2] as string, mac(adminToken, m[1] as string))) return undefined;
  let c: TokenClaims;
  try {
    c = JSON.parse(Buffer.from(m[1] as string, 'base64url').toString()) as TokenClaims;
  } catch {
    return undefined;
  }
  if (store.find('serviceaccounts', c.ns, c.name)?.metadata.uid !== c.uid) return undefined;
  if (c.expires !== undefined && c.expires * 1000 < Date.now()) return undefined;
  if (c.secret !== undefined && !store.find('secrets', c.ns, c.secret)) return undefined;
  return { name: `system:serviceaccount:${c.ns}:${c.name}`, groups: ['system:serviceaccounts', `system:serviceaccounts:${c.ns}`, 'system:authenticated'] };
}

export interface Attributes {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

const bound = (b: Obj, u: User, ns: string | undefined) =>
  ((b as Any).subjects ?? []).some((s: Any) =>
    s.kind === 'User' ? s.name === u.name
    : s.kind === 'Group' ? u.groups.includes(s.name)
    : s.kind === 'ServiceAccount' && u.name === `system:serviceaccount:${s.namespace ?? ns}:${s.name}`,
  );

const has = (list: string[] | undefined, v: string) => (list ?? []).includes('*') || (list ?? []).includes(v);

function allows(rule: Any, a: Attributes): boolean {
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  return (
    has(rule.verbs, a.verb) &&
    has(rule.apiGroups, a.group) &&
    (has(rule.resources, resource) || (!!a.subresource && (rule.resources ?? []).includes(`*/${a.subresource}`))) &&
    (!rule.resourceNames?.length || (!!a.name && rule.resourceNames.includes(a.name)))
  );
}

/** The rules bound to the user where the request acts: ClusterRoleBindings everywhere, RoleBindings in their namespace. */
function rulesOf(store: Store, u: User, ns: string | undefined): Any[] {
  const roleRules = (ref: Any, bindingNs: string | undefined): Any[] => {
    const role = ref?.kind === 'ClusterRole' ? store.find('clusterroles', undefined, ref.name) : ref?.kind === 'Role' && bindingNs ? store.find('roles', bindingNs, ref.name) : undefined;
    return ((role as Any | undefined)?.rules ?? []) as Any[];
  };
  const cluster = store.list('clusterrolebindings').filter((b) => bound(b, u, undefined)).flatMap((b) => roleRules((b as Any).roleRef, undefined));
  const local = ns ? store.list('rolebindings', ns).filter((b) => bound(b, u, ns)).flatMap((b) => roleRules((b as Any).roleRef, ns)) : [];
  return [...cluster, ...local];
}

/** Refuses what the user may not do, with kube-apiserver's message (responsewriters.forbiddenMessage). */
export function authorize(store: Store, u: User, a: Attributes): void {
  if (u.groups.includes('system:masters')) return;
  if (rulesOf(store, u, a.namespace).some((r) => allows(r, a))) return;
  const what = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const where = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
  const reason = `User "${u.name}" cannot ${a.verb} resource "${what}" in API group "${a.group}" ${where}`;
  const gr = a.group ? `${a.resource}.${a.group}` : a.resource;
  throw new ApiError(403, 'Forbidden', a.name ? `${gr} "${a.name}" is forbidden: ${reason}` : `${gr} is forbidden: ${reason}`, {
    ...(a.name ? { name: a.name } : {}),
    ...(a.group ? { group: a.group } : {}),
    kind: a.resource,
  });
}

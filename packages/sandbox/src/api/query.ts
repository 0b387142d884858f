/**
 * What a request asks of objects: label and field selectors (the grammar kubectl and
 * client-node send), and the three patch types (JSON, merge, strategic merge).
 */
import { ApiError } from './errors.js';
import type { Obj } from './store.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Splits on commas outside parentheses: "a in (x,y),b" → ["a in (x,y)", "b"]. */
function terms(sel: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const c of sel) {
    if (c === '(') depth++;
    if (c === ')') depth--;
    if (c === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/** A label selector: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`. */
export function labelMatcher(sel: string | undefined): (labels: Record<string, string> | undefined) => boolean {
  if (!sel) return () => true;
  const tests = terms(sel).map((t): ((l: Record<string, string>) => boolean) => {
    let m: RegExpExecArray | null;
    if ((m = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(t))) {
      const [, k, op, vs] = m as unknown as [string, string, string, string];
      const set = new Set(vs.split(',').map((v) => v.trim()));
      return op === 'in' ? (l) => k in l && set.has(l[k] as string) : (l) => !(k in l) || !set.has(l[k] as string);
    }
    if ((m = /^([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)$/.exec(t))) {
      const [, k, op, v] = m as unknown as [string, string, string, string];
      return op === '!=' ? (l) => l[k] !== v : (l) => l[k] === v;
    }
    if ((m = /^!([\w./-]+)$/.exec(t))) return (l) => !((m as RegExpExecArray)[1] as string in l);
    if (/^[\w./-]+$/.test(t)) return (l) => t in l;
    throw ApiError.badRequest(`unable to parse requirement: invalid label selector "${sel}"`);
  });
  return (labels) => tests.every((f) => f(labels ?? {}));
}

/** A metav1.LabelSelector object (matchLabels and matchExpressions, ANDed): an empty one matches everything. */
export function labelSelectorMatcher(sel: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] }): (labels: Record<string, string> | undefined) => boolean {
  return (labels = {}) =>
    Object.entries(sel.matchLabels ?? {}).every(([k, v]) => labels[k] === v) &&
    (sel.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
      if (operator === 'In') return key in labels && values.includes(labels[key] as string);
      if (operator === 'NotIn') return !(key in labels) || !values.includes(labels[key] as string);
      if (operator === 'Exists') return key in labels;
      if (operator === 'DoesNotExist') return !(key in labels);
      throw ApiError.badRequest(`"${operator}" is not a valid label selector operator`);
    });
}

/** The fields a field selector may name, per resource (as the real server's field label conversions). */
const FIELDS: Record<string, (o: Obj) => string | undefined> = {
  'metadata.name': (o) => o.metadata.name,
  'metadata.namespace': (o) => o.metadata.namespace,
  'spec.nodeName': (o) => ((o.spec ?? {}) as Any).nodeName ?? '',
  'status.phase': (o) => ((o.status ?? {}) as Any).phase ?? '',
  'spec.unschedulable': (o) => String(Boolean(((o.spec ?? {}) as Any).unschedulable)),
  'spec.schedulerName': (o) => ((o.spec ?? {}) as Any).schedulerName ?? '',
  'spec.serviceAccountName': (o) => ((o.spec ?? {}) as Any).serviceAccountName ?? '',
  'status.podIP': (o) => ((o.status ?? {}) as Any).podIP ?? '',
  'spec.restartPolicy': (o) => ((o.spec ?? {}) as Any).restartPolicy ?? '',
  'involvedObject.name': (o) => ((o as Any).involvedObject ?? {}).name,
};

/** A field selector: `f=v`, `f==v`, `f!=v`, comma-joined. Unknown fields are a 400, as on a real server. */
export function fieldMatcher(sel: string | undefined): (o: Obj) => boolean {
  if (!sel) return () => true;
  const tests = terms(sel).map((t) => {
    const m = /^([\w.]+)\s*(==|=|!=)\s*(.*)$/.exec(t);
    const get = m ? FIELDS[m[1] as string] : undefined;
    if (!m || !get) throw ApiError.badRequest(`"${m?.[1] ?? t}" is not a known field selector: only "${Object.keys(FIELDS).join('", "')}"`);
    const [, , op, v] = m;
    return (o: Obj) => (op === '!=' ? get(o) !== v : get(o) === v);
  });
  return (o) => tests.every((f) => f(o));
}

const isObject = (x: unknown): x is Any => typeof x === 'object' && x !== null && !Array.isArray(x);

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Any = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * Strategic merge patch, for the fields kubectl patches: lists of objects merged by
 * their merge key where the Kubernetes types say so (containers by name, conditions by
 * type…), `$patch: delete` items, and the `$setElementOrder`/`$retainKeys` directives
 * (order and retention are not kept: the sandbox has no use for them).
 */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name', initContainers: 'name', ephemeralContainers: 'name', volumes: 'name', env: 'name', ports: 'containerPort',
  conditions: 'type', addresses: 'type', volumeMounts: 'mountPath', ownerReferences: 'uid', imagePullSecrets: 'name', tolerations: '', taints: '',
};
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  if (patch.$patch === 'replace') {
    const { $patch: _, ...rest } = patch;
    return rest;
  }
  const out: Any = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$setElementOrder/') || k === '$retainKeys') continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      out[field] = (out[field] ?? []).filter((x: unknown) => !(v as unknown[]).includes(x));
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    const mk = MERGE_KEYS[k];
    if (Array.isArray(v) && mk && Array.isArray(out[k])) {
      const merged: Any[] = [...out[k]];
      for (const item of v as Any[]) {
        const i = merged.findIndex((x) => x?.[mk] === item?.[mk]);
        if (item?.$patch === 'delete') {
          if (i >= 0) merged.splice(i, 1);
        } else if (i >= 0) merged[i] = strategicMergePatch(merged[i], item) as Any;
        else merged.push(item);
      }
      out[k] = merged;
    } else if (k === 'finalizers' && Array.isArray(v) && Array.isArray(out[k])) {
      out[k] = [...new Set([...out[k], ...v])]; // metadata.finalizers: patchStrategy merge (a set)
    } else out[k] = strategicMergePatch(out[k], v);
  }
  return out;
}

/** RFC 6902 JSON patch: add, remove, replace, test, move, copy. */
export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw ApiError.badRequest('the JSON patch is not an array of operations');
  let doc = structuredClone(target);
  const path = (p: string) => p.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const walk = (p: string[], create: boolean): { parent: Any; key: string } => {
    let cur: Any = doc as Any;
    for (const seg of p.slice(0, -1)) {
      if (cur[seg] === undefined && create) cur[seg] = {};
      cur = cur[seg];
      if (cur === undefined || cur === null) throw new ApiError(422, 'Invalid', `the JSON patch path does not exist: /${p.join('/')}`);
    }
    return { parent: cur, key: p[p.length - 1] as string };
  };
  const get = (p: string) => path(p).reduce<Any | undefined>((c, s) => (c === undefined ? undefined : c[s]), doc as Any);
  for (const op of ops as Any[]) {
    const p = path(String(op.path ?? ''));
    if (op.op === 'test') {
      if (JSON.stringify(get(op.path)) !== JSON.stringify(op.value)) throw new ApiError(422, 'Invalid', `testing value ${op.path} failed`);
      continue;
    }
    if (!p.length) {
      if (op.op === 'replace' || op.op === 'add') doc = op.value;
      continue;
    }
    const value = op.op === 'move' || op.op === 'copy' ? structuredClone(get(op.from)) : op.value;
    if (op.op === 'move') {
      const from = walk(path(op.from), false);
      if (Array.isArray(from.parent)) from.parent.splice(Number(from.key), 1);
      else delete from.parent[from.key];
    }
    const { parent, key } = walk(p, op.op !== 'remove');
    if (op.op === 'remove') {
      if (!(key in parent)) throw new ApiError(422, 'Invalid', `the JSON patch removes a missing path: ${op.path}`);
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete parent[key];
    } else if (op.op === 'replace' || op.op === 'add' || op.op === 'move' || op.op === 'copy') {
      if (Array.isArray(parent) && op.op !== 'replace') parent.splice(key === '-' ? parent.length : Number(key), 0, value);
      else (parent as Any)[key] = value;
    } else throw ApiError.badRequest(`unknown JSON patch operation "${op.op}"`);
  }
  return doc;
}

/**
 * A required node affinity (a NodeSelector: a PersistentVolume's
 * spec.nodeAffinity.required) evaluated against a Node as Kubernetes evaluates it:
 * component-helpers' scheduling/corev1/nodeaffinity (LazyErrorNodeSelector.Match),
 * with apimachinery's labels.Requirement and fields selectors underneath. Pure.
 *
 *   - The terms are ORed, the expressions of a term ANDed; an empty term (no
 *     expression, no field) matches nothing, and so does a selector of no terms.
 *   - matchExpressions on the Node's labels: In, NotIn, Exists, DoesNotExist, Gt, Lt.
 *     NotIn and DoesNotExist hold for a label the Node does not have. Gt and Lt parse
 *     the label's value and their one value as 64-bit integers (Go's ParseInt, base
 *     10); a label that does not parse, or is absent, does not match.
 *   - matchFields on the Node's fields (metadata.name alone): In and NotIn with
 *     exactly one value. A Node without a name has no fields, and then the term's
 *     fields are not asked.
 *   - A term that does not parse (an unknown operator, a values count its operator
 *     does not take, a key or value no label can have) matches nothing; the other
 *     terms still do, as the lazy selector the scheduler uses.
 */

/** One requirement of a term, as the API serialises a NodeSelectorRequirement. */
export interface NodeSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

/** A NodeSelector: its terms, ORed. */
export interface NodeSelector {
  nodeSelectorTerms?: NodeSelectorTerm[];
}

/** What of a Node a selector reads: its name (the field metadata.name) and its labels. */
export interface NodeLike {
  metadata?: { name?: string; labels?: Record<string, string> };
}

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** apimachinery's IsQualifiedName: a label key, "name" or "prefix/name". */
export function isLabelKey(key: string): boolean {
  const parts = key.split('/');
  if (parts.length > 2) return false;
  const name = parts.length === 2 ? (parts[1] as string) : (parts[0] as string);
  if (parts.length === 2) {
    const prefix = parts[0] as string;
    if (!prefix || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)) return false;
  }
  return name.length > 0 && name.length <= 63 && QUALIFIED_NAME.test(name);
}

/** apimachinery's IsValidLabelValue: empty, or up to 63 characters of alphanumerics, '-', '_' and '.', alphanumeric at both ends. */
export const isLabelValue = (value: string): boolean => value.length <= 63 && LABEL_VALUE.test(value);

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Go's strconv.ParseInt(s, 10, 64): an optional sign and decimal digits, within int64; undefined otherwise. */
export function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n < INT64_MIN || n > INT64_MAX ? undefined : n;
}

/** A parsed term: undefined when it does not parse (it then matches nothing). */
type Matcher = (labels: Record<string, string>, fields: Record<string, string>) => boolean;

/** labels.NewRequirement's checks, then Requirement.Matches; undefined when it does not parse. */
function labelRequirement(r: NodeSelectorRequirement): ((labels: Record<string, string>) => boolean) | undefined {
  const values = r.values ?? [];
  if (!isLabelKey(r.key) || !values.every(isLabelValue)) return undefined;
  const has = (l: Record<string, string>) => Object.prototype.hasOwnProperty.call(l, r.key);
  switch (r.operator) {
    case 'In':
      return values.length ? (l) => has(l) && values.includes(l[r.key] as string) : undefined;
    case 'NotIn':
      return values.length ? (l) => !has(l) || !values.includes(l[r.key] as string) : undefined;
    case 'Exists':
      return values.length ? undefined : has;
    case 'DoesNotExist':
      return values.length ? undefined : (l) => !has(l);
    case 'Gt':
    case 'Lt': {
      const bound = values.length === 1 ? parseInt64(values[0] as string) : undefined;
      if (bound === undefined) return undefined;
      return (l) => {
        const v = has(l) ? parseInt64(l[r.key] as string) : undefined;
        return v !== undefined && (r.operator === 'Gt' ? v > bound : v < bound);
      };
    }
    default:
      return undefined;
  }
}

/** nodeSelectorRequirementsAsFieldSelector: In and NotIn of exactly one value; any other operator does not parse. */
function fieldRequirement(r: NodeSelectorRequirement): ((fields: Record<string, string>) => boolean) | undefined {
  const values = r.values ?? [];
  if ((r.operator !== 'In' && r.operator !== 'NotIn') || values.length !== 1) return undefined;
  // fields.Set.Get: a field the Node does not have reads as "".
  const get = (f: Record<string, string>) => (Object.prototype.hasOwnProperty.call(f, r.key) ? (f[r.key] as string) : '');
  return r.operator === 'In' ? (f) => get(f) === values[0] : (f) => get(f) !== values[0];
}

/** newNodeSelectorTerm and nodeSelectorTerm.match; undefined when the term does not parse. */
function parseTerm(t: NodeSelectorTerm): Matcher | undefined {
  const exprs = (t.matchExpressions ?? []).map(labelRequirement);
  const fields = (t.matchFields ?? []).map(fieldRequirement);
  if (exprs.includes(undefined) || fields.includes(undefined)) return undefined;
  const matchLabels = exprs as ((l: Record<string, string>) => boolean)[];
  const matchFields = fields as ((f: Record<string, string>) => boolean)[];
  return (labels, nodeFields) => {
    if (matchLabels.length && !matchLabels.every((m) => m(labels))) return false;
    // Fields are asked only of a Node that has some (a name).
    if (matchFields.length && Object.keys(nodeFields).length && !matchFields.every((m) => m(nodeFields))) return false;
    return true;
  };
}

/** Whether the selector selects the Node: any of its non-empty terms that parse matches it. */
export function selectsNode(selector: NodeSelector | undefined, node: NodeLike | undefined): boolean {
  if (!selector || !node) return false;
  const labels = node.metadata?.labels ?? {};
  const fields: Record<string, string> = node.metadata?.name ? { 'metadata.name': node.metadata.name } : {};
  return (selector.nodeSelectorTerms ?? []).some((t) => {
    // isEmptyNodeSelectorTerm: an empty term selects nothing.
    if (!t.matchExpressions?.length && !t.matchFields?.length) return false;
    return parseTerm(t)?.(labels, fields) ?? false;
  });
}

/** The names of the Nodes the selector selects, in the list's order. */
export const nodesSelected = (selector: NodeSelector | undefined, nodes: readonly NodeLike[]): string[] =>
  nodes.filter((n) => selectsNode(selector, n)).map((n) => n.metadata?.name ?? '');

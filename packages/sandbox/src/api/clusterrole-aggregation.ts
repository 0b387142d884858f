/**
 * kube-controller-manager's clusterrole-aggregation controller, one pass: a ClusterRole
 * with an aggregationRule gets as its rules the union of the rules of every other
 * ClusterRole its clusterRoleSelectors match (selector by selector, the roles of each in
 * their names' order, each rule once),
 * written only when that changes.
 */
import { labelSelectorMatcher } from './query.js';
import type { Store } from './store.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export function clusterRoleAggregationController(store: Store): void {
  const roles = store.list('clusterroles');
  for (const role of roles) {
    if (!(role as Any).aggregationRule) continue;
    const selectors = (((role as Any).aggregationRule.clusterRoleSelectors ?? []) as Any[]).map((s) => labelSelectorMatcher(s ?? {}));
    const rules: Any[] = [];
    const seen = new Set<string>();
    // Selector by selector, each one's roles in their names' order (store.list's), as the controller walks them.
    for (const matches of selectors) {
      for (const other of roles) {
        if (other.metadata.name === role.metadata.name || !matches(other.metadata.labels)) continue;
        for (const rule of ((other as Any).rules ?? []) as Any[]) {
          const k = JSON.stringify(rule);
          if (!seen.has(k)) seen.add(k), rules.push(rule);
        }
      }
    }
    if (JSON.stringify((role as Any).rules ?? []) === JSON.stringify(rules)) continue;
    const next: Any = { ...role, rules };
    if (!rules.length) delete next.rules; // none: omitted, as the controller's nil rules are
    store.update('clusterroles', next as typeof role, 'rbac.authorization.k8s.io');
  }
}

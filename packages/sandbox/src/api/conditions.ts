/**
 * Status conditions as the controllers set them (apiextensions' SetCRDCondition,
 * kube-aggregator's SetAPIServiceCondition): a condition of the same type is replaced,
 * its lastTransitionTime kept unless its status changes.
 */
import { rfc3339 } from './store.js';

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime?: string;
}

/** The conditions with `next` set; the same array (by value) when nothing but the time would change. */
export function setCondition(conditions: Condition[] | undefined, next: Condition): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const was = i >= 0 ? list[i] : undefined;
  const lastTransitionTime = was && was.status === next.status && was.lastTransitionTime ? was.lastTransitionTime : rfc3339();
  const c = { ...was, ...next, lastTransitionTime };
  if (was) list[i] = c;
  else list.push(c);
  return list;
}

export const conditionTrue = (conditions: Condition[] | undefined, type: string): boolean => (conditions ?? []).some((c) => c.type === type && c.status === 'True');

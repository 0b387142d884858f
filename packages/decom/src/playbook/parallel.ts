/**
 * `parallel:` groups: adjacent built-in node steps that run side by side on the node, in
 * one round trip. Two steps may only when neither can see or change the other's work:
 * their re-probed views do not meet, their paths do not nest, and the design's order
 * (each step's `follows`) does not put one after the other.
 */
import { NARROWER, reprobedViews, type View } from '../probes/index.js';
import { within } from '../rules/residue.js';
import type { StepSpec } from './types.js';

const viewsMeet = (a: View, b: View): boolean => a === b || NARROWER[a] === b || NARROWER[b] === a;

/** Why a step cannot run side by side with any other, whatever the group; undefined when it may. */
export function cannotRunInParallel(name: string, spec: StepSpec): string | undefined {
  if (spec.cluster) return `${name} works on the cluster through its API, one step at a time`;
  if (spec.reprobe) return `${name} probes the whole node again, which only a step on its own can do`;
  if (spec.paths === undefined) return `${name} does not say which paths it changes, so decom cannot tell that it is independent`;
  return undefined;
}

/** Why steps `a` and `b` cannot run side by side (the first reason found); undefined when they are independent. */
export function conflict(a: { name: string; spec: StepSpec }, b: { name: string; spec: StepSpec }): string | undefined {
  if (a.spec.follows?.includes(b.name)) return `${a.name} must come after ${b.name} (the order of a reset)`;
  if (b.spec.follows?.includes(a.name)) return `${b.name} must come after ${a.name} (the order of a reset)`;
  const va = reprobedViews((a.spec.views ?? []) as View[]);
  const vb = reprobedViews((b.spec.views ?? []) as View[]);
  const view = [...va].find((x) => [...vb].some((y) => viewsMeet(x, y)));
  if (view) return `both look at the node's ${view} (each step's re-probe would see the other's work)`;
  for (const p of a.spec.paths ?? []) {
    const q = (b.spec.paths ?? []).find((x) => within(p, x) || within(x, p));
    if (q) return `both change files below ${within(p, q) ? q : p}`;
  }
  return undefined;
}

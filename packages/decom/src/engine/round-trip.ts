/**
 * One round trip to a node: a step's actions, then the probe of the views they
 * touched, in ONE exec. The script travels on stdin (a firewall of 100,000 rules does
 * not fit in one command-line argument); each action's output and exit status come
 * back in sections marked like the probe's, so nothing an action prints can forge one.
 */
import type { Transport } from '../transport/types.js';
import { newNonce, probedElsewhere, probeNode, stateFromSections, unfinishedProbe, type NodeState, type View } from '../probes/index.js';
import { CONTAINERD_DEFAULTS, type ContainerdPaths } from '../cri/containerd-config.js';
import { probeBody, scriptPrelude } from '../probes/script.js';
import { splitSections } from '../probes/parse.js';
import type { Action, ActionResult } from './step.js';

/** Runs the script read from stdin; commands in it read /dev/null, never the script. */
const FROM_STDIN = 'S=$(cat); exec </dev/null; eval "$S"';

/** Keep this much of an action's output: its first and last lines matter, the middle rarely. */
const EXCERPT = 2000;
const excerpt = (s: string): string =>
  s.length <= EXCERPT ? s : `${s.slice(0, EXCERPT / 2)}\n…(${s.length - EXCERPT} bytes)…\n${s.slice(-EXCERPT / 2)}`;

/**
 * One action: its output and exit status in sections act-I and rc-I, with the node's
 * clock before and after (/proc/uptime, read without a fork: 10 ms steps), for the journal.
 */
function actionScript(a: Action, i: number): string {
  const run = `( ${a.script}\n) 2>&1; RC=$?`;
  // A guard that says no prints why (a remedy's "a process is in it now", or "gone"): that is the skipped action's
  // output. Written to a file, not read through a pipe: a child the guard leaves behind cannot hold the trip open.
  const body = a.guard ? `if ( ${a.guard}\n) >"$GUARD_OUT" 2>/dev/null; then ${run}; else cat "$GUARD_OUT"; RC=skip; fi` : run;
  return `s act-${i}\nread -r T0 _ </proc/uptime\n${body}\nread -r T1 _ </proc/uptime\ns rc-${i}\nprintf '%s %s %s\\n' "$RC" "$T0" "$T1"`;
}

/** A sequence of actions, numbered from `first`, with the guards' scratch file when one has a guard. */
function sequenceScript(actions: readonly Action[], first: number): string {
  const guarded = actions.some((a) => a.guard);
  const body = actions.map((a, i) => actionScript(a, first + i)).join('\n');
  return guarded ? `GUARD_OUT=$(mktemp) || GUARD_OUT=/dev/null\n${body}\n[ "$GUARD_OUT" = /dev/null ] || rm -f "$GUARD_OUT"` : body;
}

/**
 * Branches of actions side by side (a playbook's `parallel:` group): each in a background
 * subshell writing its sections to a file of its own (in /run, else the temp dir), so no
 * two interleave; then the files in order. Cut off by the trip's timeout, what the
 * branches wrote is still printed (the client names which actions finished). Without a
 * scratch dir they run one after the other.
 */
function branchesScript(branches: readonly (readonly Action[])[]): string {
  const live = branches.filter((b) => b.length);
  let n = 0;
  const parts = live.map((b) => {
    const text = sequenceScript(b, n);
    n += b.length;
    return text;
  });
  if (parts.length < 2) return parts.join('');
  const parallel = parts.map((text, i) => `( ${text}\n) >"$PAR/${i}" 2>&1 &`).join('\n');
  const files = parts.map((_, i) => `"$PAR/${i}"`).join(' ');
  const flush = `cat ${files} 2>/dev/null; rm -rf -- "$PAR"`;
  return `if PAR=$(mktemp -d /run/decom-parallel.XXXXXX 2>/dev/null || mktemp -d); then\ntrap '${flush}; exit 124' TERM HUP INT\n${parallel}\nwait\ntrap - TERM HUP INT\n${flush}\nelse\n${parts.join('\n')}\nfi`;
}

/**
 * The trip's script: `actions` one after the other, or `branches` side by side (each
 * branch in order), then the probe of `views`. Action numbers run through the branches in order.
 */
export function roundTripScript(nonce: string, actions: readonly Action[] | { branches: readonly (readonly Action[])[] }, views: ReadonlySet<View> | null, preamble = '', rt: ContainerdPaths = CONTAINERD_DEFAULTS, daemon?: string): string {
  const acts = 'branches' in actions ? branchesScript(actions.branches) : sequenceScript(actions, 0);
  return `${scriptPrelude(nonce, rt)}${preamble}\n${acts}\n${views ? probeBody(views, rt, daemon) : 's end\n'}exit 0\n`;
}

export interface RoundTrip {
  state: NodeState;
  results: ActionResult[];
  /** Sections the preamble printed (e.g. the lock's verdict). */
  sections: Map<string, string>;
}

export async function roundTrip(
  t: Transport,
  o: {
    actions: readonly Action[] | { branches: readonly (readonly Action[])[] };
    /** What to probe after the actions; null: nothing, the state stays `prev` (actions whose re-probe comes in a later trip). */
    views: ReadonlySet<View> | null;
    prev?: NodeState;
    sudo: boolean;
    timeoutSec: number;
    preamble?: string;
  },
): Promise<RoundTrip> {
  const nonce = newNonce();
  const rt = o.prev?.containerd ?? CONTAINERD_DEFAULTS;
  const r = await t.exec(FROM_STDIN, { stdin: roundTripScript(nonce, o.actions, o.views, o.preamble, rt, o.prev?.containerdDaemon), sudo: o.sudo, timeoutSec: o.timeoutSec });
  const sections = splitSections(r.stdout, nonce);
  const all = 'branches' in o.actions ? o.actions.branches.flat() : o.actions;
  const results: ActionResult[] = all.map((a, i) => {
    // "RC UPTIME-BEFORE UPTIME-AFTER": the node's own time for the action.
    const [rc, t0, t1] = (sections.get(`rc-${i}`) ?? '').trim().split(/\s+/);
    const ms = t0 && t1 ? Math.round((Number(t1) - Number(t0)) * 1000) : NaN;
    const timed = Number.isFinite(ms) ? { ms } : {};
    const output = excerpt((sections.get(`act-${i}`) ?? '').replace(/\n$/, ''));
    if (rc === 'skip') return { ...a, skipped: true, ...(output ? { output } : {}), ...timed };
    // The trip ended and this action said nothing: its branch could not start or was cut off.
    if (!rc && sections.has('end')) return { ...a, output: output || 'no exit status came back (its branch could not run, or was cut off)' };
    return { ...a, ...(rc ? { code: Number(rc) } : {}), output, ...timed };
  });
  if (!sections.has('end')) {
    // The actions may have run, partly: say which finished, then fail the host.
    const err = unfinishedProbe(t.host, r, nonce);
    Object.assign(err, { results });
    throw err;
  }
  if (!o.views) {
    if (!o.prev) throw new Error('a round trip that probes nothing needs the state it keeps');
    return { state: o.prev, results, sections };
  }
  const state = stateFromSections(sections, o.prev);
  // The node's containerd config puts its paths elsewhere (first sight of it, or it changed): look again there, probe only.
  if (probedElsewhere(rt, state.containerd, o.views)) return { state: await probeNode(t, { views: o.views, prev: state, sudo: o.sudo, timeoutSec: o.timeoutSec }), results, sections };
  return { state, results, sections };
}

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

export function roundTripScript(nonce: string, actions: readonly Action[], views: ReadonlySet<View>, preamble = '', rt: ContainerdPaths = CONTAINERD_DEFAULTS, daemon?: string): string {
  const acts = actions
    .map((a, i) => {
      const run = `( ${a.script}\n) 2>&1; RC=$?`;
      // A guard that says no prints why (a remedy's "a process is in it now", or "gone"): that is the skipped action's
      // output. Written to a file, not read through a pipe: a child the guard leaves behind cannot hold the trip open.
      const body = a.guard ? `if ( ${a.guard}\n) >"$GUARD_OUT" 2>/dev/null; then ${run}; else cat "$GUARD_OUT"; RC=skip; fi` : run;
      return `s act-${i}\n${body}\ns rc-${i}\nprintf '%s\\n' "$RC"`;
    })
    .join('\n');
  const guarded = actions.some((a) => a.guard);
  const guardFile = guarded ? 'GUARD_OUT=$(mktemp) || GUARD_OUT=/dev/null\n' : '';
  const cleanup = guarded ? '\n[ "$GUARD_OUT" = /dev/null ] || rm -f "$GUARD_OUT"' : '';
  return `${scriptPrelude(nonce, rt)}${preamble}\n${guardFile}${acts}${cleanup}\n${probeBody(views, rt, daemon)}exit 0\n`;
}

export interface RoundTrip {
  state: NodeState;
  results: ActionResult[];
  /** Sections the preamble printed (e.g. the lock's verdict). */
  sections: Map<string, string>;
}

export async function roundTrip(
  t: Transport,
  o: { actions: readonly Action[]; views: ReadonlySet<View>; prev?: NodeState; sudo: boolean; timeoutSec: number; preamble?: string },
): Promise<RoundTrip> {
  const nonce = newNonce();
  const rt = o.prev?.containerd ?? CONTAINERD_DEFAULTS;
  const r = await t.exec(FROM_STDIN, { stdin: roundTripScript(nonce, o.actions, o.views, o.preamble, rt, o.prev?.containerdDaemon), sudo: o.sudo, timeoutSec: o.timeoutSec });
  const sections = splitSections(r.stdout, nonce);
  const results: ActionResult[] = o.actions.map((a, i) => {
    const rc = sections.get(`rc-${i}`)?.trim();
    const output = excerpt((sections.get(`act-${i}`) ?? '').replace(/\n$/, ''));
    if (rc === 'skip') return { ...a, skipped: true, ...(output ? { output } : {}) };
    return { ...a, ...(rc === undefined ? {} : { code: Number(rc) }), output };
  });
  if (!sections.has('end')) {
    // The actions may have run, partly: say which finished, then fail the host.
    const err = unfinishedProbe(t.host, r, nonce);
    Object.assign(err, { results });
    throw err;
  }
  const state = stateFromSections(sections, o.prev);
  // The node's containerd config puts its paths elsewhere (first sight of it, or it changed): look again there, probe only.
  if (probedElsewhere(rt, state.containerd, o.views)) return { state: await probeNode(t, { views: o.views, prev: state, sudo: o.sudo, timeoutSec: o.timeoutSec }), results, sections };
  return { state, results, sections };
}

/**
 * How a run looks to people and machines: a live per-host, per-step view (listr2)
 * on a terminal, timestamped plain lines otherwise, then one summary line per host;
 * or one JSON document. Reporters subscribe to engine events; the engine never
 * imports them.
 */
import type { EngineEvent, HostResult } from '../engine/engine.js';
import type { StepResult } from '../engine/step.js';
import { printable, renderSummary, summarizeFindings } from '../verify/report.js';
import { withoutHost } from '../transport/types.js';

export interface Reporter {
  event(e: EngineEvent): void;
  /** Resolves when the live view has drawn its last frame. */
  done(): Promise<void>;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
/** " [parallel: GROUP]" after a step that runs side by side with others. */
const parallelMark = (r: StepResult) => (r.parallel ? ` [parallel: ${r.parallel}]` : '');
const stepLine = (r: StepResult) =>
  `${r.name} ${r.status}${parallelMark(r)}${r.actions.length ? ` (${r.actions.length} action${r.actions.length === 1 ? '' : 's'}, ${secs(r.ms)})` : ''}${r.reason && r.status !== 'ok' ? `: ${r.reason}` : ''}`;

/** Plain lines, one per finished step, for CI logs and pipes. */
export function plainReporter(out: NodeJS.WritableStream, check: boolean): Reporter {
  const ts = () => new Date().toISOString().slice(11, 19);
  return {
    event(e) {
      if (e.type === 'step-log') out.write(`${ts()} ${printable(e.host)}  ${printable(`${e.step}: ${e.line}`)}\n`);
      if (e.type === 'step-end') {
        const planned = check && e.result.actions.length ? `: would ${e.result.actions.map((a) => a.what).join('; ')}` : '';
        out.write(`${ts()} ${printable(e.host)}  ${printable(check ? `${e.result.name} ${e.result.status === 'changed' ? 'would change' : e.result.status}${parallelMark(e.result)}${planned}` : stepLine(e.result))}\n`);
      }
    },
    done: async () => {},
  };
}

/** listr2: a line per host with the step it is on; its verdict once it ends. */
export async function liveReporter(hosts: string[]): Promise<Reporter> {
  const { Listr } = await import('listr2');
  interface Row { output: string; title?: string; failed?: boolean; task?: { output: string; title: string }; finish(): void; ended: Promise<void> }
  const rows = new Map<string, Row>();
  for (const h of hosts) {
    let finish!: () => void;
    const ended = new Promise<void>((resolve) => (finish = resolve));
    rows.set(h, { output: 'waiting', finish, ended });
  }
  const show = (r: Row) => {
    if (!r.task) return; // listr2 has not started the task yet; it shows the latest when it does
    r.task.output = r.output;
    if (r.title) r.task.title = r.title;
  };
  const list = new Listr(
    hosts.map((h) => ({
      title: printable(h),
      task: async (_: unknown, task: { output: string; title: string }) => {
        const row = rows.get(h)!;
        row.task = task;
        show(row);
        await row.ended;
        if (row.failed) throw new Error(row.title); // listr2 marks it ✖
      },
    })),
    { concurrent: true, exitOnError: false },
  );
  const running = list.run().catch(() => {});
  return {
    event(e) {
      const row = rows.get(e.host);
      if (!row) return;
      if (e.type === 'host-start') row.output = 'connecting…';
      if (e.type === 'step-start') row.output = `${e.step}…`;
      if (e.type === 'step-log') row.output = `${e.step}: ${e.line}`;
      if (e.type === 'step-end') row.output = stepLine(e.result);
      if (e.type === 'host-end') {
        row.title = `${printable(e.host)}: ${printable(verdict(e.result))}`;
        row.failed = !e.result.clean && e.result.down !== 'done';
      }
      show(row);
      if (e.type === 'host-end') row.finish();
    },
    async done() {
      for (const r of rows.values()) r.finish(); // hosts never started (a stopped roll) end too
      await running;
    },
  };
}

function verdict(r: HostResult): string {
  const n = (s: StepResult['status']) => r.steps.filter((x) => x.status === s).length;
  const counts = `${n('changed')} changed, ${n('ok')} ok${n('failed') ? `, ${n('failed')} failed` : ''}${n('skipped') ? `, ${n('skipped')} skipped` : ''}`;
  if (r.refused) return `REFUSED: ${r.refused}`;
  if (r.notRun) return `NOT RUN: ${r.notRun}`;
  if (r.error) return `${r.lost ? 'LOST' : r.outputCapped ? 'NOT CHECKED' : r.reachable ? 'FAILED' : 'NOT REACHED'}: ${withoutHost(r.host, r.error)}`;
  if (r.clean) return `clean (${counts})`;
  if (r.down === 'done') return `cluster side done; the host is down and was not reset (${counts})`;
  const failed = r.steps.find((s) => s.status === 'failed');
  return `NOT CLEAN${failed ? `: ${failed.name} failed${failed.reason ? ` (${failed.reason})` : ''}` : ''} (${counts})`;
}

/** The steps from `i` on that share its `parallel:` group, up to the first that does not. */
function groupFrom(steps: StepResult[], i: number): StepResult[] {
  const group = steps[i]?.parallel;
  let end = i;
  while (group && steps[end + 1]?.parallel === group) end++;
  return steps.slice(i, end + 1);
}

/** After the run: per host its verdict, what is left (by kind), its backup; in --check, every planned action. */
export function renderRunText(results: HostResult[], o: { check: boolean; details: boolean; journal: string }): string {
  const out: string[] = [];
  for (const r of results) {
    const host = printable(r.host);
    if (o.check) {
      for (const [i, s] of r.steps.entries()) {
        // Once per group, before its first step: which steps a real run runs side by side.
        if (s.parallel && r.steps[i - 1]?.parallel !== s.parallel) {
          const members = groupFrom(r.steps, i).filter((x) => x.status !== 'skipped');
          if (members.length > 1) out.push(`${host}  ${members.map((x) => x.name).join(' + ')}: run side by side, in one round trip (parallel: ${printable(s.parallel)})`);
        }
        if (s.status === 'skipped') out.push(`${host}  ${s.name}: skipped (${printable(s.reason ?? '')})`);
        else if (!s.actions.length) out.push(`${host}  ${s.name}: ${s.left.length ? `cannot remove ${s.left.length} (${printable(s.reason ?? '')})` : 'nothing to do'}`);
        for (const a of s.actions) out.push(`${host}  ${s.name}: ${printable(a.what)}${a.nodeDecides ? `  [node decides: ${printable(a.nodeDecides)}]` : ''}`);
      }
    }
    for (const w of r.warnings) out.push(`${host}: warning: ${printable(w)}`);
    if (r.left.length && !r.refused) {
      out.push(
        ...(o.details
          ? r.left.map((f) => `${host}  left  ${f.kind}  ${printable(f.subject)}  ${printable(f.detail)}`)
          : renderSummary(summarizeFindings(r.left), `${host}  left  `)),
      );
    }
  }
  for (const r of results) {
    out.push(`${printable(r.host)}: ${o.check ? 'CHECK: ' : ''}${printable(verdict(r))}${r.backup ? `; backup: ${printable(r.backup)}` : ''}`);
  }
  out.push(`journal: ${o.journal}`);
  return `${out.join('\n')}\n`;
}

export function renderRunJson(results: HostResult[], o: { runId: string; journal: string; check: boolean }): string {
  const count = (r: HostResult, s: StepResult['status']) => r.steps.filter((x) => x.status === s).length;
  return `${JSON.stringify(
    {
      run: o.runId,
      check: o.check,
      journal: o.journal,
      hosts: results.map((r) => ({
        host: r.host,
        reachable: r.reachable,
        clean: r.clean,
        ok: count(r, 'ok'),
        changed: count(r, 'changed'),
        failed: count(r, 'failed'),
        skipped: count(r, 'skipped'),
        ...(r.error ? { error: r.error } : {}),
        ...(r.refused ? { refused: r.refused } : {}),
        ...(r.notRun ? { notRun: r.notRun } : {}),
        ...(r.down ? { down: r.down } : {}),
        ...(r.finishes ? { finishes: r.finishes } : {}),
        ...(r.warnings.length ? { warnings: r.warnings } : {}),
        ...(r.backup ? { backup: r.backup } : {}),
        steps: r.steps.map((s) => ({
          name: s.name,
          status: s.status,
          ...(s.parallel ? { parallel: s.parallel } : {}),
          ...(s.reason ? { reason: s.reason } : {}),
          actions: s.actions.map((a) => ({ what: a.what, ...(a.nodeDecides ? { nodeDecides: a.nodeDecides } : {}), ...(a.code !== undefined ? { code: a.code } : {}), ...(a.skipped ? { skipped: true } : {}) })),
          left: s.left,
        })),
        left: r.left,
      })),
    },
    null,
    2,
  )}\n`;
}

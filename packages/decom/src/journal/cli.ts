/**
 * `decom journal [RUN-ID]`: what runs and fixes did, read back from their journals —
 * the recent ones listed (newest first), or one shown event by event: each host's
 * lock verdict, every action with its command or API request and how it ended.
 */
import { journalFiles, readJournal, stateDir, type JournalEvent } from '../engine/journal.js';
import { printable } from '../verify/report.js';
import { inputError } from '../util/errors.js';
import { count } from '../util/flags.js';
import { EXIT } from '../util/exit-codes.js';

export interface JournalFlags {
  stateDir?: string;
  output: 'text' | 'json';
  last: string;
}

/** One journal's summary line: its command, start, hosts and how it ended. */
interface RunSummary {
  run: string;
  command: string;
  started: string;
  hosts: string[];
  check: boolean;
  /** The exit code, or undefined: it did not finish (running now, or killed). */
  exit?: number;
  file: string;
}

function summary(runId: string, file: string, events: JournalEvent[]): RunSummary {
  const start = events.find((e) => e.event === 'run-start') ?? ({} as Partial<JournalEvent>);
  const end = events.find((e) => e.event === 'run-end');
  const command = String(start.command ?? 'run') + (Array.isArray(start.kinds) && start.kinds.length ? ` ${(start.kinds as string[]).join(',')}` : '');
  return {
    run: runId,
    command,
    started: String(start.ts ?? events[0]?.ts ?? ''),
    hosts: Array.isArray(start.hosts) ? (start.hosts as string[]) : [],
    check: start.check === true,
    ...(typeof end?.exit === 'number' ? { exit: end.exit } : {}),
    file,
  };
}

/** One event as a line an SRE reads: when, where, what, and how it ended. */
function eventLine(e: JournalEvent): string {
  const where = e.host ? `${e.host}: ` : '';
  const rest = (() => {
    switch (e.event) {
      case 'run-start':
        return `${e.command ?? 'run'} started${e.check ? ' (check)' : ''}: ${Array.isArray(e.hosts) ? (e.hosts as string[]).join(' ') : ''}${e.playbook ? `, playbook ${e.playbook}` : ''}${Array.isArray(e.kinds) ? `, kinds ${(e.kinds as string[]).join(',')}` : ''}`;
      case 'host-start':
        return `started, lock ${e.lock}${e.other ? ` (${e.other})` : ''}`;
      case 'lock-wait': {
        const h = (e.holder ?? {}) as { runId?: string; command?: string };
        return `waiting for the node's lock: held by ${h.runId ?? '?'}${h.command ? ` (${h.command})` : ''}${e.work ? `, whose work still runs: ${e.work}` : ''}`;
      }
      case 'resume':
        return `finishes run ${e.finishes}${e.stopped ? `; ${e.stopped}` : ''}`;
      case 'daemon-start':
      case 'daemon-started':
        return `  ${e.event === 'daemon-start' ? 'starting' : 'started'} ${e.daemon}`;
      case 'step-start':
        return `step ${e.step}${e.parallel ? ` [parallel: ${e.parallel}]` : ''}`;
      case 'action':
        return `  ${e.action}: ${e.api ? `${e.api} -> ${e.status}` : e.skipped ? `skipped${e.output ? ` (${String(e.output).trim()})` : ''}` : `exit ${e.code ?? '-'}`}${typeof e.ms === 'number' ? ` (${e.ms} ms)` : ''}`;
      case 'step':
        return `step ${e.step} ${e.status}${typeof e.ms === 'number' ? ` (${(e.ms / 1000).toFixed(2)} s)` : ''}${e.reason ? `: ${e.reason}` : ''}`;
      case 'refused':
        return `REFUSED: ${e.reason}`;
      case 'error':
        return `ERROR: ${e.error}`;
      case 'host-end':
        return `ended${e.clean ? ' clean' : ''}${e.refused ? ' (refused)' : ''}${e.error ? ` (error)` : ''}`;
      case 'run-end':
        return `ended, exit ${e.exit}`;
      default:
        return `${e.event}${e.line ? `: ${e.line}` : ''}${e.reason ? `: ${e.reason}` : ''}`;
    }
  })();
  return `${e.ts}  ${printable(where + rest)}`;
}

export function journalCommand(runId: string | undefined, flags: JournalFlags): number {
  const dir = stateDir(flags.stateDir);
  const files = journalFiles(dir);
  if (runId === undefined) {
    const last = count('--last', flags.last, 1) as number;
    const runs = files.slice(0, last).map((f) => summary(f.runId, f.file, readJournal(f.file)));
    if (flags.output === 'json') process.stdout.write(`${JSON.stringify({ stateDir: dir, runs }, null, 2)}\n`);
    else if (!runs.length) process.stdout.write(`no runs in ${dir}\n`);
    else {
      const w = Math.max(...runs.map((r) => r.command.length + (r.check ? 8 : 0)));
      for (const r of runs) {
        const how = r.exit === undefined ? 'unfinished (running, or killed: a rerun finishes it)' : `exit ${r.exit}`;
        process.stdout.write(`${r.run}  ${`${r.command}${r.check ? ' (check)' : ''}`.padEnd(w)}  ${r.hosts.join(',')}  ${how}\n`);
      }
    }
    return EXIT.clean;
  }
  const matches = files.filter((f) => f.runId === runId || f.runId.startsWith(runId));
  if (!matches.length) throw inputError(`no run ${runId} in ${dir} (decom journal lists them; --state-dir names another place)`);
  if (matches.length > 1 && !matches.some((m) => m.runId === runId)) throw inputError(`${runId} names ${matches.length} runs: ${matches.map((m) => m.runId).join(', ')}`);
  const one = matches.find((m) => m.runId === runId) ?? (matches[0] as { runId: string; file: string });
  const events = readJournal(one.file);
  if (flags.output === 'json') process.stdout.write(`${JSON.stringify({ ...summary(one.runId, one.file, events), events }, null, 2)}\n`);
  else process.stdout.write(`${events.map(eventLine).join('\n')}\n`);
  return EXIT.clean;
}

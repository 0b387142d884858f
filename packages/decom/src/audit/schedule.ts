/**
 * The audit on a schedule: `--print-systemd-timer`, a unit and timer pair running
 * this very command line (minus the flag) with the Prometheus textfile written for
 * node-exporter's textfile collector; or `--listen --every` (the DaemonSet), the
 * audit repeated in this process with its metrics served.
 */
import { resolve } from 'node:path';
import { inputError } from '../util/errors.js';
import type { AuditReport } from './audit.js';
import { renderPrometheus } from './report.js';

/** Debian's prometheus-node-exporter reads *.prom from here. */
const TEXTFILE_DIR = '/var/lib/prometheus/node-exporter';

/** An argument as systemd's ExecStart reads it: quoted when it must be, % doubled (a specifier otherwise). */
const unitArg = (a: string) => {
  const s = a.replace(/%/g, '%%');
  return /^[A-Za-z0-9_./:=,@+-]+$/.test(s) ? s : `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
};

/**
 * The two units, each headed by the path it goes to. `args` are the audit's own
 * arguments after `audit`, as typed: the service runs in the directory they were typed
 * in (`cwd`), so every relative path in them (the inventory, -e @FILE, a key, a
 * known_hosts file) means what it meant. --textfile is added when they have none.
 */
export function systemdUnits(args: string[], onCalendar: string, cwd: string): string {
  const rest = args.filter((a) => a !== '--print-systemd-timer');
  // --on-calendar is the timer's, not the service's.
  const i = rest.findIndex((a) => a === '--on-calendar' || a.startsWith('--on-calendar='));
  if (i >= 0) rest.splice(i, rest[i]!.includes('=') ? 1 : 2);
  const withTextfile = rest.some((a) => a === '--textfile' || a.startsWith('--textfile=')) ? rest : [...rest, '--textfile', `${TEXTFILE_DIR}/decom.prom`];
  const exec = [process.execPath, resolve(process.argv[1] ?? 'decom'), 'audit', ...withTextfile].map(unitArg).join(' ');
  return `# --- /etc/systemd/system/decom-audit.service ---
[Unit]
Description=decom audit: Kubernetes residue across the fleet
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
WorkingDirectory=${unitArg(cwd)}
ExecStart=${exec}
# Exit 1 (residue found) is the audit's answer, not a failed run; 2 and 3 are failures.
SuccessExitStatus=1
Nice=10
IOSchedulingClass=idle

# --- /etc/systemd/system/decom-audit.timer ---
[Unit]
Description=decom audit, on a schedule

[Timer]
OnCalendar=${onCalendar}
RandomizedDelaySec=5min
Persistent=true

[Install]
WantedBy=timers.target
`;
}

/**
 * The DaemonSet's mode: audit every `everySec`, and serve the last audit's metrics at
 * /metrics (Prometheus scrapes the pod), so no host path is ever written. Runs until
 * the process is stopped.
 */
export async function serveMetrics(at: { host: string; port: number }, everySec: number, run: () => Promise<AuditReport>): Promise<number> {
  const { createServer } = await import('node:http');
  let text = '';
  const server = createServer((req, res) => {
    if (req.url?.split('?')[0] !== '/metrics' || !text) {
      res.writeHead(text ? 404 : 503).end(text ? 'not found: /metrics\n' : 'no audit finished yet\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(text);
  });
  await new Promise<void>((resolve, reject) => server.once('error', (e) => reject(inputError(`--listen ${at.host}:${at.port}: ${e.message}`))).listen(at.port, at.host, resolve));
  process.stderr.write(`serving the audit's metrics at http://${at.host}:${at.port}/metrics, audited every ${everySec}s\n`);
  for (;;) {
    try {
      const report = await run();
      text = renderPrometheus(report);
      process.stderr.write(`${new Date(report.time).toISOString()} audited ${report.hosts.length} host(s): ${report.hosts.reduce((n, h) => n + h.findings.length, 0) + report.cluster.length} finding(s)\n`);
    } catch (e) {
      process.stderr.write(`audit failed: ${(e as Error).message}\n`);
    }
    await new Promise((r) => setTimeout(r, everySec * 1000));
  }
}

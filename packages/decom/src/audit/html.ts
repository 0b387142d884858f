/**
 * The audit as one self-contained HTML file (no script, font or style fetched at view
 * time): a heat map of hosts x kinds, each cell coloured by its kind and shaded by
 * its count, linking to the findings below with their evidence.
 */
import type { AuditReport } from './audit.js';
import { notCheckedLines, rows, xml as esc } from './report.js';
import { AUDIT_KINDS, type AuditKind } from '../rules/audit.js';
import { factsLine } from '../rules/facts.js';

/** A colour per kind (a cell with findings has it); clean cells are pale grey, unchecked ones hatched. */
export const KIND_COLOURS: Record<AuditKind, string> = {
  'phantom-pod': '#d62728',
  'orphan-pod-dir': '#ff7f0e',
  'orphan-pod-cgroup': '#8c564b',
  'orphan-netns': '#1f77b4',
  'orphan-veth': '#17becf',
  'orphan-ipam-lease': '#9467bd',
  'stuck-terminating-pod': '#e377c2',
  'stuck-terminating-namespace': '#bcbd22',
  'stale-node': '#7f7f7f',
  'stale-etcd-member': '#2ca02c',
  'stale-volume-attachment': '#393b79',
  'stale-local-pv': '#5254a3',
  'stuck-deleting-object': '#843c39',
  'unavailable-apiservice': '#e7ba52',
  'finished-pods': '#637939',
};
export const CLEAN_COLOUR = '#eeeeee';

const id = (row: string, kind: string) => `f-${row.replace(/[^A-Za-z0-9_-]/g, '_')}-${kind}`;

export function renderHtml(r: AuditReport): string {
  const skipped = new Set(r.notChecked?.kinds ?? []);
  const all = rows(r);
  const head = AUDIT_KINDS.map((k) => `<th scope="col" title="${k}">${esc(k)}</th>`).join('');
  const body = all
    .map((x) => {
      const cells = AUDIT_KINDS.map((k) => {
        const n = x.findings.filter((f) => f.kind === k).length;
        const state = !x.reachable ? 'unreachable' : skipped.has(k) ? 'unchecked' : n ? 'found' : 'clean';
        const style = state === 'found' ? ` style="background:${KIND_COLOURS[k]}"` : '';
        const text = state === 'found' ? `<a href="#${id(x.name, k)}">${n}</a>` : state === 'clean' ? '0' : state === 'unchecked' ? '–' : '?';
        return `<td class="cell ${state}" data-host="${esc(x.name)}" data-kind="${k}" data-count="${n}"${style}>${text}</td>`;
      }).join('');
      const facts = r.hosts.find((h) => h.host === x.name)?.facts;
      const said = facts ? ` <small class="facts">${esc(factsLine(facts))}</small>` : '';
      return `<tr><th scope="row">${esc(x.name)}${x.reachable ? said : ` <small>(${esc(x.error ?? 'not checked')})</small>`}</th>${cells}</tr>`;
    })
    .join('\n');
  const details = all
    .flatMap((x) =>
      AUDIT_KINDS.flatMap((k) => {
        const fs = x.findings.filter((f) => f.kind === k);
        if (!fs.length) return [];
        const items = fs
          .map((f) => `<li><b>${esc(f.subject)}</b>: ${esc(f.detail)}${f.evidence.length ? `<ul>${f.evidence.map((e) => `<li><code>${esc(e)}</code></li>`).join('')}</ul>` : ''}</li>`)
          .join('');
        return [`<section id="${id(x.name, k)}"><h3><span class="swatch" style="background:${KIND_COLOURS[k]}"></span>${esc(x.name)}: ${fs.length} ${k}</h3><ul>${items}</ul></section>`];
      }),
    )
    .join('\n');
  const found = all.reduce((n, x) => n + x.findings.length, 0);
  // What a host could not settle (unverified pod traces, a partial view): said, never counted.
  const warned = r.hosts.filter((h) => h.warnings?.length);
  const warnings = warned.length
    ? `<h2>Warnings</h2>\n<ul class="warnings">${warned.flatMap((h) => (h.warnings ?? []).map((w) => `<li><b>${esc(h.host)}</b>: ${esc(w)}</li>`)).join('')}</ul>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>decom audit ${esc(new Date(r.time).toISOString())}</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse}
th,td{border:1px solid #fff;padding:0}
thead th{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;padding:.3em;height:11em;text-align:left}
tbody th{text-align:left;padding:0 .6em;font-weight:normal;white-space:nowrap}
td.cell{width:3em;height:2em;text-align:center}
td.clean{background:${CLEAN_COLOUR};color:#999}
td.found a{color:#fff;font-weight:bold;text-decoration:none;display:block;line-height:2em}
td.unchecked{background:repeating-linear-gradient(45deg,#f6f6f6,#f6f6f6 4px,#ddd 4px,#ddd 8px);color:#777}
td.unreachable{background:#222;color:#fff}
small.facts{color:#666;margin-left:.5em}
.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.4em;vertical-align:-.1em}
code{font-size:12px}
</style></head><body>
<h1>decom audit</h1>
<p>${esc(new Date(r.time).toISOString())}${r.shard ? ` · shard ${esc(r.shard)}` : ''}${r.server ? ` · API ${esc(r.server)}` : ''} · ${r.hosts.length} hosts · ${found} findings</p>
${notCheckedLines(r).map((n) => `<p class="notchecked">Not checked: ${esc(n.kinds.join(', '))} (${esc(n.why)})</p>`).join('\n')}
<table id="heatmap"><thead><tr><th></th>${head}</tr></thead>
<tbody>
${body}
</tbody></table>
<h2>Findings</h2>
${details || '<p>None.</p>'}
${warnings}
</body></html>
`;
}

/**
 * The node's DNS given back (docs/findings.md#dns): kubespray's edits of the host's resolver
 * configuration removed, the host's own entries kept. resolv.conf's block rewritten without
 * the cluster's entries (never emptied), dhclient's supersede block and exit hook,
 * systemd-resolved's drop-in, NetworkManager's drop-ins and its dns.conf keys, each judged by
 * content against the cluster's facts (inventory/cluster-dns.ts). Backed up first by the
 * backup step; then a running NetworkManager is reloaded (never restarted: the SSH session
 * may ride on it) and a running systemd-resolved reloaded where it can be, else try-restarted.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Action, Step } from '../engine/step.js';
import type { DnsView, NodeState } from '../probes/state.js';
import { clusterDnsOf } from '../inventory/cluster-dns.js';
import { DHCLIENT_CONFS, DHCLIENT_HOOKS, dnsEdits, type DnsEdit } from '../rules/dns.js';
import { deletePathScript, q } from '../engine/sh.js';

/** The edits the step makes: kubespray's whole files deleted, its lines cut out of the host's (what is only named is not among them). */
export function plannedDnsEdits(s: NodeState): (DnsEdit & { change: NonNullable<DnsEdit['change']> })[] {
  return dnsEdits(s.dns, s.clusterDns ?? clusterDnsOf({})).filter((e): e is DnsEdit & { change: NonNullable<DnsEdit['change']> } => e.change !== undefined);
}

const contentOf = (v: DnsView, path: string): string | undefined => v.files.find((f) => (f.target ?? f.path) === path)?.content;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Guards that the file is still what the probe read (a regular file, not a link, the same
 * bytes): an edit made since is never written over.
 */
const unchangedSince = (path: string, text: string) =>
  `[ -f ${q(path)} ] && [ ! -L ${q(path)} ] || { echo ${q(`refused ${path}: not the regular file the probe read`)}; exit 1; }
[ "$(sha256sum < ${q(path)})" = ${q(`${sha256(text)}  -`)} ] || { echo ${q(`refused ${path}: it changed since the probe read it`)}; exit 1; }`;

/**
 * Rewrites a file in place of itself, atomically: the new text goes to a file beside it,
 * given its mode, owner and SELinux label, then renamed over it, so a reader sees the old file or the new.
 */
const rewriteScript = (path: string, before: string, after: string) => {
  const dir = path.slice(0, path.lastIndexOf('/')) || '/';
  return `${unchangedSince(path, before)}
T=$(mktemp ${q(`${dir}/.decom-dns.XXXXXX`)}) || exit 1
printf %s ${q(after)} > "$T" || { rm -f "$T"; exit 1; }
chmod --reference=${q(path)} "$T" && chown --reference=${q(path)} "$T" || { rm -f "$T"; exit 1; }
# The file's SELinux label too, where SELinux is on: dhclient and NetworkManager are confined to the file's type.
if [ -e /sys/fs/selinux/enforce ] && command -v chcon >/dev/null; then chcon --reference=${q(path)} "$T" || { rm -f "$T"; exit 1; }; fi
mv -f -- "$T" ${q(path)} || { rm -f "$T"; exit 1; }`;
};

export const dns: Step = {
  name: 'dns',
  description:
    "give the node's DNS back: kubespray's resolv.conf block rewritten without the cluster's entries (never emptied), its dhclient, systemd-resolved and NetworkManager edits removed (an administrator's kept), their services reloaded",
  params: z.object({}),
  owns: (f) => f.kind === 'dns-config',
  views: ['dns'],
  // kubespray's resolver files (a rewrite's temp file goes beside its file), and what the reloaded services write.
  paths: ['/etc/resolv.conf', '/etc/dhclient.conf', '/etc/dhcp', '/etc/systemd/resolved.conf.d', '/etc/NetworkManager', '/run/systemd/resolve', '/run/NetworkManager'],
  follows: ['backup', 'containers'],
  plan(s) {
    const edits = plannedDnsEdits(s);
    // dhclient reads its config at start only: a running one writes the cluster's servers again at its next renewal.
    const dhclients = [...s.processes.values()].filter((p) => p.name === 'dhclient').map((p) => p.pid);
    const restartDhclient = dhclients.length ? `; dhclient runs (pid ${dhclients.join(', ')}) with the old settings: restart it, or its next renewal writes them back` : '';
    const actions: Action[] = edits.map((e) => {
      const before = contentOf(s.dns, e.path) ?? '';
      const dhclient = DHCLIENT_CONFS.some((p) => p === e.path) || DHCLIENT_HOOKS.some((p) => p === e.path) ? restartDhclient : '';
      if (e.change === 'delete') {
        return { what: `delete ${e.path} (kubespray's: ${e.detail}${dhclient})`, script: `${unchangedSince(e.path, before)}\n${deletePathScript(e.path, { root: e.path.slice(0, e.path.lastIndexOf('/')) })}` };
      }
      return { what: `rewrite ${e.path} without the cluster's entries (${e.detail}${dhclient})`, script: rewriteScript(e.path, before, e.change.content) };
    });
    const services = new Set(edits.map((e) => e.service).filter(Boolean));
    if (services.has('NetworkManager') && s.dns.services.networkManager) {
      actions.push({ what: 'reload NetworkManager (never a restart: the SSH session may depend on it)', script: 'systemctl reload NetworkManager.service' });
    }
    if (services.has('systemd-resolved') && s.dns.services.resolved) {
      actions.push(
        s.dns.services.resolvedCanReload
          ? { what: 'reload systemd-resolved', script: 'systemctl reload systemd-resolved.service' }
          : { what: 'try-restart systemd-resolved (this systemd cannot reload it)', script: 'systemctl try-restart systemd-resolved.service' },
      );
    }
    return actions;
  },
  after(s) {
    const edits = new Map(plannedDnsEdits(s).map((e) => [e.path, e.change]));
    const files = s.dns.files.map((f) => {
      const change = edits.get(f.target ?? f.path);
      if (!change) return f;
      if (change === 'delete') return { path: f.path, type: 'absent' as const };
      return { ...f, content: change.content };
    });
    return { ...s, dns: { ...s.dns, files } };
  },
};

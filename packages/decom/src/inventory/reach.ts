/**
 * The hosts a command reaches, as ssh would reach them: each host's command line given
 * to `ssh -G` (openssh-config.ts), the warnings of what decom does not honour said once.
 */
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { inputError, UserError, warnOnStderr } from '../util/errors.js';
import { askSecret } from '../util/prompt.js';
import { pool } from '../util/pool.js';
import type { ReachWarning } from './connection.js';
import { jumpHop, sshDashG, targetFromSshConfig } from './openssh-config.js';
import type { SshTarget } from '../transport/types.js';
import type { Host } from './types.js';

/** ssh -G runs at once for this many hosts: each is a short process of its own. */
const SSH_G_AT_ONCE = 16;

export interface ReachOptions {
  /** -k: the SSH login password of every host whose inventory gives none. */
  password?: string;
  /** Where warnings go, one line each (default: stderr). */
  warn?: (line: string) => void;
  /** The ssh client (tests point it elsewhere). */
  ssh?: string;
  /**
   * Told of each host as soon as its own connection is known, with its place in `hosts`:
   * a command dials it then, while the other hosts' `ssh -G` still run (connector.ts EarlyDials).
   */
  onReached?: (host: Host, index: number) => void;
}

/**
 * The hosts with their connection as OpenSSH computes it. Without an ssh binary, the
 * inventory's alone (and one warning when an OpenSSH config exists that was not read).
 * ansible_connection=local hosts are left as they are. Each warning is printed once,
 * with the hosts it concerns.
 */
export async function reachHosts(hosts: Host[], opts: ReachOptions = {}): Promise<Host[]> {
  const said = new Map<string, string[]>();
  const note = (w: ReachWarning, host: string) => said.set(w.text, [...(said.get(w.text) ?? []), host]);
  let noSsh = false;
  const reached = await pool(hosts, SSH_G_AT_ONCE, async (h, i) => {
    const r = await reachOne(h);
    opts.onReached?.(r, i);
    return r;
  });
  async function reachOne(h: Host): Promise<Host> {
    if (opts.password !== undefined && h.password === undefined) h = { ...h, password: opts.password };
    const reach = h.reach;
    if (reach?.refusal) throw inputError(reach.refusal);
    if (!reach || h.connection === 'local') return h;
    for (const w of reach.warnings) note(w, h.name);
    if (noSsh) return h;
    let values;
    try {
      values = await sshDashG(reach.options, reach.destination, opts.ssh);
    } catch (e) {
      throw inputError(`${h.name}: ssh -G ${reach.destination} (the OpenSSH config for this host) failed: ${(e as Error).message}`);
    }
    if (!values) {
      noSsh = true;
      return h;
    }
    try {
      const { target, warnings } = targetFromSshConfig(h, reach, values);
      for (const w of warnings) note(w, h.name);
      return { ...h, ...(await withJumpHosts(target, opts.ssh)) };
    } catch (e) {
      if (e instanceof UserError) throw e;
      throw inputError(`${h.name}: cannot use what ssh -G says: ${(e as Error).message}`);
    }
  }
  if (noSsh) {
    const unread = openSshConfigFiles(hosts).filter((f) => existsSync(f));
    if (unread.length) note({ text: `no ssh client found: ${unread.join(', ')} not read; hosts are reached as the inventory alone says` }, '*');
  }
  const warn = opts.warn ?? warnOnStderr;
  for (const [text, names] of said) {
    const who = names.includes('*') ? '' : ` (${names.length === hosts.length && hosts.length > 1 ? 'every host' : names.join(', ')})`;
    warn(`decom: warning${who}: ${text}`);
  }
  return reached;
}

/**
 * Each ProxyJump hop as ssh reaches it: ssh runs one ssh per hop, with the -F file given
 * (not the other options) and the hop's own config (HostName, User, Port, its known_hosts).
 */
async function withJumpHosts<T extends SshTarget>(target: T, ssh: string | undefined): Promise<T> {
  if (!target.proxyJump.length) return target;
  const hops = await Promise.all(
    target.proxyJump.map(async (spec) => {
      const m = /^(?:(.*)@)?(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(spec);
      if (!m) return { spec, files: undefined };
      const [, user, host, port] = m;
      const args = [...(target.sshConfigFile ? ['-F', target.sshConfigFile] : []), ...(user ? ['-l', user] : []), ...(port ? ['-p', port] : [])];
      let v;
      try {
        v = await sshDashG(args, host!.replace(/^\[|\]$/g, ''), ssh);
      } catch (e) {
        throw inputError(`${target.name}: ssh -G ${host} (the OpenSSH config for its jump host) failed: ${(e as Error).message}`);
      }
      if (!v) return { spec, files: undefined };
      const hop = jumpHop(v);
      return hop ?? { spec, files: undefined };
    }),
  );
  const resolved: T = { ...target, proxyJump: hops.map((h) => h.spec) };
  if (hops.every((h) => h.files?.length)) resolved.jumpKnownHostsFiles = hops.map((h) => h.files!);
  return resolved;
}

/** -k/--ask-pass: the login password, asked once on the terminal, as ReachOptions. */
export async function askedPassword(flags: { askPass?: boolean }): Promise<ReachOptions> {
  return flags.askPass ? { password: await askSecret('SSH password: ', '--ask-pass') } : {};
}

/** The OpenSSH config files ssh would read for these hosts: the -F files, else the user's and the system's. */
function openSshConfigFiles(hosts: Host[]): string[] {
  const named = [...new Set(hosts.map((h) => h.sshConfigFile).filter((f): f is string => !!f))];
  let home: string;
  try {
    home = userInfo().homedir; // ssh reads the passwd entry's home, not $HOME
  } catch {
    home = process.env.HOME ?? '/';
  }
  return [...named, join(home, '.ssh', 'config'), '/etc/ssh/ssh_config'];
}

/**
 * The OpenSSH config as ssh itself computes it: the host's ssh command line given to
 * `ssh -G`, and the SshTarget made of what it prints (hostname, port, user, keys, jump
 * hosts, ProxyCommand, known_hosts files, timeouts), with what decom does not honour named.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir, hostname, userInfo } from 'node:os';
import { expandHome } from '../util/paths.js';
import { run } from '../util/run.js';
import { HOST_KEYS_ALWAYS_CHECKED, optionsForMaster, type Reach, type ReachWarning } from './connection.js';
import type { SshTarget } from '../transport/types.js';

/** What `ssh -G` printed: lower-case keys, every value of a key in order (identityfile repeats). */
export type SshConfigValues = Map<string, string[]>;

/** Match exec commands run inside ssh -G: a config that hangs there is named, not waited on. */
const SSH_G_TIMEOUT_MS = 15_000;

/** `ssh -G OPTIONS DESTINATION`; undefined when there is no ssh binary. */
export async function sshDashG(options: string[], destination: string, ssh = 'ssh'): Promise<SshConfigValues | undefined> {
  let r;
  try {
    r = await run(ssh, ['-G', ...options, destination], { timeoutMs: SSH_G_TIMEOUT_MS });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  if (r.code !== 0) {
    const why = r.stderr.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('Pseudo-terminal')).join('; ');
    throw new Error(r.code === null ? `ssh -G did not finish within ${SSH_G_TIMEOUT_MS / 1000}s (a Match exec that hangs?)` : why || `ssh -G exited ${r.code}`);
  }
  return parseSshG(r.stdout);
}

export function parseSshG(text: string): SshConfigValues {
  const values: SshConfigValues = new Map();
  for (const line of text.split('\n')) {
    const m = /^(\S+)\s+(.*)$/.exec(line.trim());
    if (!m) continue;
    const key = m[1]!.toLowerCase();
    values.set(key, [...(values.get(key) ?? []), m[2]!]);
  }
  return values;
}

/**
 * OpenSSH's tokens as ssh expands them in IdentityFile and ProxyCommand: %% %h %p %r
 * %n %d %u %i %l %L. An unknown token is left as written (ssh refuses it: so does the
 * file or command that holds it).
 */
export function expandTokens(s: string, t: { host: string; port: number; user: string; destination: string }): string {
  const local = hostname();
  const tokens: Record<string, string> = {
    '%': '%',
    h: t.host,
    p: String(t.port),
    r: t.user,
    n: t.destination,
    d: homedir(),
    u: safeUser(),
    i: String(process.getuid?.() ?? ''),
    l: local,
    L: local.split('.')[0]!,
  };
  const expanded = s.replace(/%(.)/g, (all, c: string) => tokens[c] ?? all);
  return expanded === '~' || expanded.startsWith('~/') ? homedir() + expanded.slice(1) : expanded;
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? '';
  }
}

const first = (v: SshConfigValues, key: string): string | undefined => v.get(key)?.[0];

/** `none` is how ssh -G prints UserKnownHostsFile=none: no file, as /dev/null. */
const noFile = (f: string) => f === '/dev/null' || f.toLowerCase() === 'none';

/** A ProxyJump hop as ssh -G computes it: user@host:port, and the known_hosts files its key is checked against. */
export function jumpHop(v: SshConfigValues): { spec: string; files: string[] } | undefined {
  const host = first(v, 'hostname');
  const user = first(v, 'user');
  const port = first(v, 'port');
  if (!host || !user || !port) return undefined;
  const files = [first(v, 'userknownhostsfile'), first(v, 'globalknownhostsfile')].flatMap((l) => (l ?? '').split(/\s+/)).filter((f) => f && !noFile(f));
  return { spec: `${user}@${host.includes(':') ? `[${host}]` : host}:${port}`, files };
}

/** Settings decom ignores, when ssh -G reports them other than off. */
const IGNORED: [key: string, off: string[], name: string, why: string][] = [
  ['controlmaster', ['false', 'no'], 'ControlMaster', 'decom keeps one connection per host for the whole run'],
  ['controlpersist', ['no', 'false'], 'ControlPersist', 'decom keeps one connection per host for the whole run'],
  ['controlpath', ['none'], 'ControlPath', 'decom keeps one connection per host for the whole run'],
  ['forwardagent', ['no', 'false'], 'ForwardAgent', 'decom never forwards the agent to a node'],
];

/** What the ssh2 library cannot do: a host whose connection sets one of these is reached through the system's ssh. */
const NEEDS_OPENSSH: [key: string, off: string[], name: string][] = [
  ['certificatefile', ['none'], 'CertificateFile'],
  ['pkcs11provider', ['none'], 'PKCS11Provider'],
  ['securitykeyprovider', ['internal'], 'SecurityKeyProvider'],
];

/**
 * GSSAPIAuthentication yes with a Kerberos ticket to log in with. Debian's own
 * /etc/ssh/ssh_config turns GSSAPI on for every host: without a ticket it is never used.
 */
function kerberosLogin(v: SshConfigValues): boolean {
  if (first(v, 'gssapiauthentication') !== 'yes') return false;
  return !!process.env.KRB5CCNAME || existsSync(`/tmp/krb5cc_${process.getuid?.() ?? ''}`);
}

/**
 * A key file ssh would offer that ssh2 cannot: one with a certificate beside it
 * (KEY-cert.pub, which ssh offers with it), or a hardware key (sk-: FIDO).
 */
function keyNeedingOpenSsh(files: string[]): string | undefined {
  for (const f of files) {
    if (!existsSync(f)) continue;
    if (existsSync(`${f}-cert.pub`)) return `the certificate beside ${f} (${f}-cert.pub)`;
    let type = '';
    try {
      type = readFileSync(`${f}.pub`, 'utf8').split(/\s/, 1)[0] ?? '';
    } catch {
      /* no public half beside it: not a hardware key's stub we can tell */
    }
    if (type.startsWith('sk-')) return `the hardware key ${f} (${type})`;
  }
  return undefined;
}

/** Where a setting ssh -G reports was written, when the inventory's own words hold it; else the OpenSSH config. */
function sourceOf(reach: Reach, name: string): string {
  const re = new RegExp(`\\b${name}\\b`, 'i');
  const found = reach.sources.find((s) => re.test(s.text));
  return found ? found.label : 'the OpenSSH config (ssh -G)';
}

/**
 * The SshTarget ssh -G's answer gives, over the inventory's own (`inventoryTarget`:
 * name, become, the inventory's key file); the warnings of what it sets that decom
 * does not honour. What only OpenSSH can do (a certificate, a hardware key, PKCS#11,
 * GSSAPI) is named in `needsOpenSsh`: the host is reached through the system's ssh.
 */
export function targetFromSshConfig(inventoryTarget: SshTarget, reach: Reach, v: SshConfigValues): { target: SshTarget; warnings: ReachWarning[] } {
  const warnings: ReachWarning[] = [];
  let needsOpenSsh: string | undefined;
  for (const [key, off, setting] of NEEDS_OPENSSH) {
    const value = first(v, key);
    if (value !== undefined && !off.includes(value.toLowerCase())) needsOpenSsh ??= `${setting} in ${sourceOf(reach, setting)}`;
  }
  if (kerberosLogin(v)) needsOpenSsh ??= `GSSAPIAuthentication in ${sourceOf(reach, 'GSSAPIAuthentication')}, with a Kerberos ticket`;
  for (const [key, off, setting, why] of IGNORED) {
    const value = first(v, key);
    if (value !== undefined && !off.includes(value.toLowerCase())) warnings.push({ text: `${setting} ${value} in ${sourceOf(reach, setting)} is ignored: ${why}` });
  }

  const address = first(v, 'hostname') ?? inventoryTarget.address;
  const port = Number(first(v, 'port') ?? inventoryTarget.port);
  const user = first(v, 'user') ?? inventoryTarget.user;
  const tokens = { host: address, port, user, destination: reach.destination };

  const strict = (first(v, 'stricthostkeychecking') ?? 'ask').toLowerCase();
  if ((strict === 'false' || strict === 'no' || strict === 'off') && !reach.strictOffByInventory) {
    warnings.push({ text: `StrictHostKeyChecking no in ${sourceOf(reach, 'StrictHostKeyChecking')} is not honoured: ${HOST_KEYS_ALWAYS_CHECKED}` });
  }
  const userFiles = (first(v, 'userknownhostsfile') ?? '').split(/\s+/).filter(Boolean);
  let knownHosts = userFiles.filter((f) => !noFile(f));
  if (userFiles.some(noFile)) {
    if (!reach.knownHostsOffByInventory) {
      warnings.push({ text: `UserKnownHostsFile ${userFiles.join(' ')} in ${sourceOf(reach, 'UserKnownHostsFile')} is not honoured: ${HOST_KEYS_ALWAYS_CHECKED} against ~/.ssh/known_hosts` });
    }
    if (knownHosts.length === 0) knownHosts = [`${homedir()}/.ssh/known_hosts`, `${homedir()}/.ssh/known_hosts2`];
  }
  const globalFiles = (first(v, 'globalknownhostsfile') ?? '').split(/\s+/).filter((f) => f && !noFile(f));

  const jump = first(v, 'proxyjump');
  const command = first(v, 'proxycommand');
  if (command && command.toLowerCase() !== 'none' && /StrictHostKeyChecking[\s=]+["']?(no|off|false)\b|UserKnownHostsFile[\s=]+["']?\/dev\/null/i.test(command)) {
    warnings.push({
      text:
        `the ProxyCommand in ${sourceOf(reach, 'ProxyCommand')} runs an ssh that does not check its hop's host key: decom checks the node's key, ` +
        'but cannot check that hop\'s; reach it with ProxyJump instead (-o ProxyJump=[user@]bastion[:port]), whose hop decom checks',
    });
  }

  const timeout = first(v, 'connecttimeout');
  const aliveInterval = Number(first(v, 'serveraliveinterval') ?? 0);
  const aliveCount = Number(first(v, 'serveralivecountmax') ?? 3);
  const identityFiles = (v.get('identityfile') ?? []).map((f) => expandTokens(f, tokens));
  const target: SshTarget = {
    ...inventoryTarget,
    address,
    port,
    user,
    destination: reach.destination,
    strictHostKeyChecking: strict === 'accept-new' ? 'accept-new' : 'yes',
    proxyJump: jump && jump.toLowerCase() !== 'none' ? jump.split(',') : [],
    connectTimeoutSec: timeout && /^[0-9]+$/.test(timeout) && Number(timeout) > 0 ? Number(timeout) : inventoryTarget.connectTimeoutSec,
    identityFiles: identityFiles.filter((f) => f !== inventoryTarget.privateKeyFile),
    identitiesOnly: first(v, 'identitiesonly') === 'yes',
    sshOptions: optionsForMaster(reach.options),
  };
  needsOpenSsh ??= keyNeedingOpenSsh([...(inventoryTarget.privateKeyFile ? [expandHome(inventoryTarget.privateKeyFile)] : []), ...identityFiles]);
  if (needsOpenSsh) target.needsOpenSsh = needsOpenSsh;
  delete target.proxyCommand;
  delete target.knownHostsFile;
  if (command && command.toLowerCase() !== 'none') target.proxyCommand = command;
  if (knownHosts[0]) target.knownHostsFile = knownHosts[0];
  const more = [...knownHosts.slice(1), ...globalFiles];
  if (more.length) target.moreKnownHostsFiles = more;
  const alias = first(v, 'hostkeyalias');
  if (alias && alias.toLowerCase() !== 'none') target.hostKeyAlias = alias;
  if (aliveInterval > 0) {
    target.serverAliveIntervalSec = aliveInterval;
    target.serverAliveCountMax = aliveCount;
  }
  return { target, warnings };
}

// `decom hosts trust`'s parts against real OpenSSH sshd processes on 127.0.0.1 (started
// here, stopped by PID in afterAll): a node's key read without logging in, directly and
// through a jump host whose key is unknown too; how each host's key stands, the lines and
// the question shown, the keys recorded once each, and the exit code.
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Host } from '../inventory/index.js';
import { connectSsh, scanHostKeys, type SshTarget } from '../transport/index.js';
import { fingerprint } from '../transport/known-hosts.js';
import { entryFor, fingerprintOf, freePort, keyOf, knownHostsWith, makeKey, startSshd, stopAllSshd, targetOf, tempDir, type Sshd } from '../../test/helpers/sshd.js';
import { classify, exitCode, question, record, renderChanged, renderText, toRecord } from './trust.js';

let dir: string;
let clientKey: string;
let node: Sshd;
let jump: Sshd;
let savedHome: string | undefined;

beforeAll(async () => {
  dir = tempDir('decom-trust-');
  clientKey = makeKey(dir, 'id_client');
  const authorized = [readFileSync(`${clientKey}.pub`, 'utf8')];
  node = await startSshd({ authorizedKeys: authorized });
  jump = await startSshd({ authorizedKeys: authorized, extraConfig: ['AllowTcpForwarding yes', 'PermitOpen any'] });
  // The known_hosts of the person running the tests must play no part.
  savedHome = process.env.HOME;
  process.env.HOME = tempDir('decom-home-');
});

afterAll(async () => {
  process.env.HOME = savedHome;
  await stopAllSshd();
});

const asHost = (t: SshTarget, name = t.name): Host => ({ ...t, name, groups: ['all'], vars: {} });
const logins = (s: Sshd) => s.log().split('\n').filter((l) => l.includes('Accepted publickey')).length;

describe('reading a host key without logging in', () => {
  it('an unknown key: read, shown as ssh-keygen -l shows it, the node never logged in to, nothing recorded', async () => {
    const file = knownHostsWith();
    const before = logins(node);
    const target = targetOf(node, clientKey, { knownHostsFile: file });
    const scan = await scanHostKeys(target);
    expect(scan.failed).toBeUndefined();
    expect(scan.keys.map((k) => [k.hop.isJump, k.file, k.host, k.port, k.verdict.status, fingerprint(k.key)])).toEqual([
      [false, file, '127.0.0.1', node.port, 'unknown', fingerprintOf(node.hostKeys.ed25519!)],
    ]);
    expect(logins(node)).toBe(before);
    expect(readFileSync(file, 'utf8')).toBe('');
    const trust = classify(asHost(target), scan);
    expect(trust.status).toBe('new');
    const keys = toRecord([trust]);
    expect(renderText([trust], keys)).toBe(`n1 ssh-ed25519 ${fingerprintOf(node.hostKeys.ed25519!)}\n`);
    expect(question(keys)).toBe(
      `Record 1 host key: [127.0.0.1]:${node.port} in ${file}.\nCompare each fingerprint with the host's own (ssh-keygen -lf on its public host key) first.\nType "yes" to record it: `,
    );
  });

  it('a known key: already trusted, naming where; exit 0, nothing to record', async () => {
    const target = targetOf(node, clientKey, { knownHostsFile: knownHostsWith('# first line', entryFor(node)) });
    const trust = classify(asHost(target), await scanHostKeys(target));
    expect([trust.status, trust.said]).toEqual(['trusted', `${target.knownHostsFile}:2`]);
    expect(toRecord([trust])).toEqual([]);
    expect(renderText([trust], [])).toBe(`n1: already trusted (${target.knownHostsFile}:2)\n`);
    expect(exitCode([trust])).toBe(0);
  });

  it('a changed key: refused with the reason a connection gives, never recorded, exit 4', async () => {
    const other = makeKey(dir, 'other_host_key');
    const file = knownHostsWith(`[127.0.0.1]:${node.port} ${keyOf(`${other}.pub`)}`);
    const target = targetOf(node, clientKey, { knownHostsFile: file });
    const trust = classify(asHost(target), await scanHostKeys(target));
    expect(trust.status).toBe('refused');
    expect(trust.said).toMatch(new RegExp(`^HOST KEY CHANGED for \\[127\\.0\\.0\\.1\\]:${node.port}: it offered ssh-ed25519 ${fingerprintOf(node.hostKeys.ed25519!).replace(/[+/]/g, '\\$&')}, but ${file}:1 records`));
    expect(toRecord([trust])).toEqual([]);
    expect(renderText([trust], [])).toBe(`n1: NOT RECORDED: ${trust.said}\n`);
    expect(exitCode([trust])).toBe(4);
  });

  it('an unreachable host: its reason without its name, exit 3 (over a refused key\'s 4)', async () => {
    const target = targetOf(node, clientKey, { port: await freePort() });
    const trust = classify(asHost(target), await scanHostKeys(target));
    expect(trust.status).toBe('unreachable');
    expect(trust.said).toMatch(/^connect: cannot connect to 127\.0\.0\.1:\d+: ECONNREFUSED/);
    expect(exitCode([trust, { host: 'x', status: 'refused', unknown: [] }])).toBe(3);
  });

  it('through a jump host whose key is unknown too: both read, the node not logged in to, the jump key listed once for two hosts; once recorded, a strict connection passes', async () => {
    const file = knownHostsWith();
    const nodeLogins = logins(node);
    const targets = ['n1', 'n2'].map((name) => targetOf(node, clientKey, { name, knownHostsFile: file, proxyJump: [`root@127.0.0.1:${jump.port}`] }));
    const trusts = await Promise.all(targets.map(async (t) => classify(asHost(t), await scanHostKeys(t))));
    expect(trusts.map((t) => [t.host, t.status, t.unknown.map((k) => k.hop.isJump)])).toEqual([['n1', 'new', [true, false]], ['n2', 'new', [true, false]]]);
    expect(logins(node)).toBe(nodeLogins);
    expect(readFileSync(file, 'utf8')).toBe('');
    const keys = toRecord(trusts);
    expect(renderText(trusts, keys).split('\n')).toEqual([
      `[127.0.0.1]:${jump.port} ssh-ed25519 ${fingerprintOf(jump.hostKeys.ed25519!)} (jump host of n1, n2)`,
      `n1, n2 ssh-ed25519 ${fingerprintOf(node.hostKeys.ed25519!)}`,
      '',
    ]);
    expect(record(keys)).toEqual({ written: keys, changed: [] });
    expect(readFileSync(file, 'utf8')).toBe(`${entryFor(jump)}\n${entryFor(node)}\n`);
    const t = await connectSsh(targets[0]!);
    expect((await t.exec('echo ok')).stdout).toBe('ok\n');
    await t.close();
    expect(logins(node)).toBe(nodeLogins + 1); // the sshd's log says a login, when there is one
    // Recorded meanwhile (a second trust, an ssh): not written twice.
    expect(record(keys)).toEqual({ written: [], changed: [] });
    expect(readFileSync(file, 'utf8').split('\n')).toHaveLength(3);
  });

  it('a key whose file changed between the scan and the confirmation: not recorded, each of its hosts named once on a line of its own, exit 4', async () => {
    const file = knownHostsWith();
    const targets = ['n1', 'n2'].map((name) => targetOf(node, clientKey, { name, knownHostsFile: file, proxyJump: [`root@127.0.0.1:${jump.port}`] }));
    const trusts = await Promise.all(targets.map(async (t) => classify(asHost(t), await scanHostKeys(t))));
    const keys = toRecord(trusts);
    expect(exitCode(trusts)).toBe(0);
    // Meanwhile, the node's name is recorded with another key (a second trust, an ssh that accepted a new key).
    const other = makeKey(dir, 'raced_host_key');
    const meanwhile = `[127.0.0.1]:${node.port} ${keyOf(`${other}.pub`)}\n`;
    writeFileSync(file, meanwhile);
    const { written, changed } = record(keys);
    expect(written.map((k) => k.jump)).toEqual([true]); // the jump host's key, still unknown, is recorded
    expect(readFileSync(file, 'utf8')).toBe(`${meanwhile}${entryFor(jump)}\n`);
    const said =
      `HOST KEY CHANGED for [127.0.0.1]:${node.port} since it was read: it showed ssh-ed25519 ${fingerprintOf(node.hostKeys.ed25519!)}, ` +
      `but ${file}:1 now records ssh-ed25519 ${fingerprintOf(`${other}.pub`)}; compare both with the host's own (ssh-keygen -lf on its public host key)`;
    expect(renderChanged(changed)).toBe(`n1: NOT RECORDED: ${said}\nn2: NOT RECORDED: ${said}\n`);
    expect(exitCode(trusts, changed)).toBe(4);
    expect(exitCode([...trusts, { host: 'x', status: 'unreachable', unknown: [] }], changed)).toBe(3);
  });

  it('a jump host whose key changed: refused as always, the node behind it not read, exit 4', async () => {
    const other = makeKey(dir, 'other_jump_key');
    const file = knownHostsWith(`[127.0.0.1]:${jump.port} ${keyOf(`${other}.pub`)}`);
    const target = targetOf(node, clientKey, { knownHostsFile: file, proxyJump: [`root@127.0.0.1:${jump.port}`] });
    const scan = await scanHostKeys(target);
    expect(scan.failed?.step).toBe('host-key');
    const trust = classify(asHost(target), scan);
    expect([trust.status, trust.said]).toEqual(['refused', expect.stringMatching(/^HOST KEY CHANGED for jump host \[127\.0\.0\.1\]:/)]);
    expect(exitCode([trust])).toBe(4);
    expect(readFileSync(file, 'utf8')).toBe(`[127.0.0.1]:${jump.port} ${keyOf(`${other}.pub`)}\n`);
  });
});

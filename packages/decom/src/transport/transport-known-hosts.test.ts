// The SSH transport's pure parts (src/transport): known_hosts parsing, matching and checking
// (known-hosts.ts), the host key algorithm preference, the command wrapping with timeout and
// sudo (command.ts), and ProxyJump hops. No sshd: the keys are generated here.
import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commandArgv, finishResult, shellCommand, signalCode, SUDO_OK_MARKER } from './command.js';
import {
  appendKnownHost,
  checkHostKey,
  fingerprint,
  hostsMatch,
  keyTypeOf,
  knownHostLine,
  knownKeyTypes,
  parseKnownHosts,
} from './known-hosts.js';
import { hostKeyAlgorithms } from './ssh-connect.js';
import { parseJump } from './jump.js';
import { TransportError } from './types.js';
import { tempDir } from '../../test/helpers/temp.js';

/** A real ed25519 public key blob, as a server would send it. */
function ed25519Blob(): Buffer {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const str = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return Buffer.concat([str(Buffer.from('ssh-ed25519')), str(raw)]);
}
const b64 = (b: Buffer) => b.toString('base64');
const hashed = (name: string) => {
  const salt = randomBytes(20);
  return `|1|${b64(salt)}|${createHmac('sha1', salt).update(name).digest('base64')}`;
};

const A = ed25519Blob();
const B = ed25519Blob();
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('known_hosts parsing', () => {
  it('reads plain, marked and hashed lines, skipping comments, blanks, unknown markers and broken keys', () => {
    const text = [
      '# comment',
      '',
      `host1,host2 ssh-ed25519 ${b64(A)} comment words`,
      `@revoked * ssh-ed25519 ${b64(B)}`,
      `@cert-authority *.example.com ssh-ed25519 ${b64(B)}`,
      `@weird host3 ssh-ed25519 ${b64(A)}`,
      `host4 ssh-rsa ${b64(A)}`, // type field does not match the blob
      `host5 ssh-ed25519`,
      `  ${hashed('host6')} ssh-ed25519 ${b64(A)}`,
    ].join('\n');
    const entries = parseKnownHosts(text, '/kh');
    expect(entries.map((e) => [e.line, e.marker ?? '', e.hosts.startsWith('|1|') ? 'hashed' : e.hosts])).toEqual([
      [3, '', 'host1,host2'],
      [4, 'revoked', '*'],
      [5, 'cert-authority', '*.example.com'],
      [9, '', 'hashed'],
    ]);
    expect(entries[0]!.key.equals(A)).toBe(true);
    expect(entries[0]!.file).toBe('/kh');
  });
});

describe('host matching', () => {
  it.each([
    ['host1', 'host1', true],
    ['HOST1', 'host1', true],
    ['host1,host2', 'host2', true],
    ['host1', 'host10', false],
    ['*.example.com', 'node1.example.com', true],
    ['*.example.com', 'example.com', false],
    ['node?', 'node7', true],
    ['node?', 'node17', false],
    ['*.example.com,!bad.example.com', 'bad.example.com', false],
    ['!bad.example.com,*.example.com', 'good.example.com', true],
    ['!bad.example.com', 'good.example.com', false],
    ['[127.0.0.1]:2222', '[127.0.0.1]:2222', true],
    ['127.0.0.1', '[127.0.0.1]:2222', false],
    ['[127.0.0.*]:2222', '[127.0.0.1]:2222', true],
    ['10.0.0.1', '10.0.0.12', false],
    ['a.b', 'axb', false], // "." is literal
  ])('%s vs %s -> %s', (hosts, name, want) => {
    expect(hostsMatch(hosts, name)).toBe(want);
  });

  it('matches hashed entries by HMAC-SHA1 of the name, and only that name', () => {
    expect(hostsMatch(hashed('[10.1.2.3]:2222'), '[10.1.2.3]:2222')).toBe(true);
    expect(hostsMatch(hashed('[10.1.2.3]:2222'), '10.1.2.3')).toBe(false);
    expect(hostsMatch('|1|bm90IGJhc2U2NA|', 'x')).toBe(false);
  });
});

describe('checkHostKey', () => {
  const text = [
    `node1 ssh-ed25519 ${b64(A)}`,
    `[node2]:2222 ssh-ed25519 ${b64(A)}`,
    `@revoked node3 ssh-ed25519 ${b64(B)}`,
    `node3 ssh-ed25519 ${b64(B)}`,
    `@cert-authority node4 ssh-ed25519 ${b64(A)}`,
  ].join('\n');
  const entries = parseKnownHosts(text, '/kh');

  it('knows a recorded key', () => {
    expect(checkHostKey(entries, 'node1', 22, A)).toMatchObject({ status: 'known', entry: { line: 1 } });
    expect(checkHostKey(entries, 'NODE1', 22, A).status).toBe('known');
    expect(checkHostKey(entries, 'node2', 2222, A)).toMatchObject({ status: 'known', entry: { line: 2 } });
  });
  it('calls a different key for a known host "changed", pointing at the recorded line', () => {
    expect(checkHostKey(entries, 'node1', 22, B)).toMatchObject({ status: 'changed', entry: { line: 1 } });
  });
  it('does not use a port-22 entry for another port, nor the reverse', () => {
    expect(checkHostKey(entries, 'node1', 2222, A).status).toBe('unknown');
    expect(checkHostKey(entries, 'node2', 22, A).status).toBe('unknown');
  });
  it('refuses a revoked key even when it is also recorded', () => {
    expect(checkHostKey(entries, 'node3', 22, B)).toMatchObject({ status: 'revoked', entry: { line: 3 } });
  });
  it('ignores @cert-authority lines', () => {
    expect(checkHostKey(entries, 'node4', 22, A).status).toBe('unknown');
  });
  it('lists the key types known for a host', () => {
    const e = parseKnownHosts(`h ssh-rsa ${b64(Buffer.from('\0\0\0\x07ssh-rsa\0', 'latin1'))}\nh ssh-ed25519 ${b64(A)}\nh ssh-ed25519 ${b64(B)}`, '/kh');
    expect(knownKeyTypes(e, 'h', 22)).toEqual(['ssh-rsa', 'ssh-ed25519']);
  });
});

describe('host key algorithm preference', () => {
  it('puts the known types first and keeps the rest as fallbacks', () => {
    expect(hostKeyAlgorithms(['ssh-rsa'])).toEqual([
      'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa', 'ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521',
    ]);
    expect(hostKeyAlgorithms(['ecdsa-sha2-nistp256', 'ssh-ed25519'])[0]).toBe('ecdsa-sha2-nistp256');
    expect(hostKeyAlgorithms([])[0]).toBe('ssh-ed25519');
  });
});

describe('fingerprints and recording keys', () => {
  it('prints fingerprints as OpenSSH does', () => {
    // ssh-keygen -lf of this known key blob (see the sshd tests for the comparison against ssh-keygen itself).
    const fp = fingerprint(A);
    expect(fp).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(keyTypeOf(A)).toBe('ssh-ed25519');
  });

  it('appends "[host]:port type key" on a line of its own, creating a 0600 file', () => {
    const dir = tempDir('decom-kh-');
    dirs.push(dir);
    const file = join(dir, 'sub', 'known_hosts');
    appendKnownHost(file, '10.0.0.1', 2222, A);
    expect(readFileSync(file, 'utf8')).toBe(`[10.0.0.1]:2222 ssh-ed25519 ${b64(A)}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    writeFileSync(file, `other ssh-ed25519 ${b64(B)}`); // no final newline
    appendKnownHost(file, 'Node1', 22, A);
    expect(readFileSync(file, 'utf8')).toBe(`other ssh-ed25519 ${b64(B)}\nnode1 ssh-ed25519 ${b64(A)}\n`);
    expect(knownHostLine('h', 22, B)).toBe(`h ssh-ed25519 ${b64(B)}`);
  });
});

describe('command wrapping', () => {
  it('runs the script as one argument of /bin/sh -c under timeout', () => {
    expect(commandArgv('echo "a b"; x', 60)).toEqual(['timeout', '-k', '5', '60', '/bin/sh', '-c', 'echo "a b"; x']);
    expect(shellCommand(['printf', "it's", 'a;b'])).toBe(`'printf' 'it'\\''s' 'a;b'`);
  });
  it('puts sudo in front, with -n, or -S -k -p "" when a password is sent', () => {
    expect(commandArgv('id', 5, { user: 'root', withPassword: false }).slice(0, 5)).toEqual(['sudo', '-n', '-u', 'root', '--']);
    expect(commandArgv('id', 5, { user: 'root', withPassword: true }).slice(0, 8)).toEqual(['sudo', '-S', '-k', '-p', '', '-u', 'root', '--']);
  });
  it('strips the sudo marker, and turns its absence into a one-line sudo error', () => {
    const become = { user: 'root', withPassword: false };
    const ok = finishResult('n1', { code: 0, stdout: Buffer.from('x'), stderr: Buffer.from(`${SUDO_OK_MARKER}\nwarn\n`) }, become, 'deploy@h');
    expect(ok).toEqual({ code: 0, stdout: 'x', stderr: 'warn\n' });
    const refused = () =>
      finishResult('n1', { code: 1, stdout: Buffer.alloc(0), stderr: Buffer.from('sudo: a password is required\n') }, become, 'deploy@h');
    expect(refused).toThrow(TransportError);
    expect(refused).toThrow('n1: sudo: deploy@h could not sudo to root: sudo: a password is required');
  });
  it('reports death by signal as 128 + signal number', () => {
    expect(signalCode('SIGKILL')).toBe(137);
    expect(signalCode('SIGTERM')).toBe(143);
    expect(signalCode(undefined)).toBe(255);
  });
});

describe('ProxyJump hops', () => {
  it.each([
    ['bastion', { user: 'deploy', address: 'bastion', port: 22 }],
    ['ops@bastion:2222', { user: 'ops', address: 'bastion', port: 2222 }],
    ['[fd00::1]:2200', { user: 'deploy', address: 'fd00::1', port: 2200 }],
    ['ops@[fd00::1]', { user: 'ops', address: 'fd00::1', port: 22 }],
  ])('%s', (spec, want) => {
    expect(parseJump(spec, 'deploy', 'n1')).toEqual({ ...want, isJump: true });
  });
  it('rejects a bad port', () => {
    expect(() => parseJump('bastion:99999', 'deploy', 'n1')).toThrow('n1: connect: bad ProxyJump hop "bastion:99999": expected [user@]host[:port]');
  });
});

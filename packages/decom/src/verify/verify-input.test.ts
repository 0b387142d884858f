// What the user sees for bad input to `decom verify`: one line naming the file,
// line, column and field (or the nearest names), exit 2, no stack trace. And hosts that
// cannot be reached (a closed port on loopback, a missing key): each named, exit 3.
import { rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decom } from '../../test/helpers/sandbox.js';
import { freePort, makeKey } from '../../test/helpers/sshd.js';
import { tempDir } from '../../test/helpers/temp.js';

const dir = tempDir('decom-verify-input-');
afterAll(() => rmSync(dir, { recursive: true }));

const inventory = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

const expectOneLine = (r: { code: number; stderr: string; stdout: string }, line: string) => {
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toBe(`decom: ${line}\n`);
};

describe('decom verify: bad input', () => {
  const good = inventory('hosts.yaml', 'all:\n  hosts:\n    node1: {ansible_host: 127.0.0.1}\n    node2: {ansible_host: 127.0.0.2}\n  children:\n    kube_node:\n      hosts: {node1: , node2: }\n');

  it('names the missing inventory file', () => {
    expectOneLine(decom(['verify', join(dir, 'nope.yaml'), 'all']), `inventory file not found: ${join(dir, 'nope.yaml')}`);
  });

  it('names file:line:column and the field of a bad value', () => {
    const bad = inventory('bad.yaml', 'all:\n  hosts:\n    node1:\n      ansible_port: twenty-two\n');
    expectOneLine(decom(['verify', bad, 'all']), `${bad}:4:21: all.hosts.node1.ansible_port: expected a port number 1-65535, got "twenty-two"`);
  });

  it('suggests the nearest names for a typo, and refuses an empty target or a pattern', () => {
    expectOneLine(decom(['verify', good, 'nod1']), 'unknown host or group "nod1"; did you mean node1, node2?');
    expectOneLine(decom(['verify', good]), 'no target given: name hosts or groups, or "all"');
    expectOneLine(decom(['verify', good, 'node*']), 'target "node*" is a pattern; decom acts only on hosts and groups named exactly');
  });

  it('names a --kubeconfig, a decom_kubeconfig or a --context that is not there, before any host is contacted', () => {
    const none = { env: { KUBECONFIG: '', HOME: dir } };
    expectOneLine(decom(['verify', good, 'all', '--kubeconfig', join(dir, 'nokc')], none), `--kubeconfig ${join(dir, 'nokc')}: no such file`);
    const named = inventory('named.yaml', `all:\n  vars: {decom_kubeconfig: ${join(dir, 'nokc')}}\n  hosts:\n    node1: {ansible_host: 127.0.0.1}\n`);
    expectOneLine(decom(['verify', named, 'all'], none), `${named}: decom_kubeconfig ${join(dir, 'nokc')}: no such file`);
    const kc = inventory('kubeconfig', 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://198.18.0.254:6443"}}]\ncontexts: [{name: here, context: {cluster: c}}]\ncurrent-context: here\n');
    expectOneLine(decom(['verify', good, 'all', '--kubeconfig', kc, '--context', 'there'], none), `--context there: no such context in ${kc} (it has here)`);
    // The inventory's file is where the context is looked for; $KUBECONFIG's when it names none.
    const withKc = inventory('with-kc.yaml', `all:\n  vars: {decom_kubeconfig: ${kc}}\n  hosts:\n    node1: {ansible_host: 127.0.0.1}\n`);
    expectOneLine(decom(['verify', withKc, 'all', '--context', 'there'], none), `--context there: no such context in ${kc} (it has here)`);
    expectOneLine(decom(['verify', good, 'all', '--context', 'there'], { env: { KUBECONFIG: kc, HOME: dir } }), `--context there: no such context in ${kc} (it has here)`);
    expect(decom(['verify', good, 'all', '--context', 'there'], none).stderr).toMatch(/^decom: --context there: no kubeconfig was found to look for it in/);
  });

  it('refuses an unknown output format', () => {
    const r = decom(['verify', good, 'all', '--output', 'yaml']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("argument 'yaml' is invalid. Allowed choices are text, json.");
  });
});

describe('decom verify: hosts that cannot be reached', () => {
  it('reports a refused connection and a missing key per host, exits 3, and leaves no socket open', async () => {
    const key = makeKey(dir, 'id_ed25519');
    const port = await freePort();
    // One that listens but never speaks: the connection decom opens to it early must be closed.
    const silent = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => silent.once('listening', resolve));
    const silentPort = (silent.address() as AddressInfo).port;
    const inv = inventory(
      'refused.yaml',
      `all:\n  hosts:\n    closed: {ansible_host: 127.0.0.1, ansible_port: ${port}, ansible_ssh_private_key_file: ${key}}\n    nokey: {ansible_host: 127.0.0.1, ansible_port: ${silentPort}, ansible_ssh_private_key_file: ${join(dir, 'missing')}}\n`,
    );
    const started = Date.now();
    const r = decom(['verify', inv, 'all', '--output', 'json']);
    const text = decom(['verify', inv, 'all']);
    silent.close();
    expect(r.code).toBe(3);
    const hosts = (JSON.parse(r.stdout) as { hosts: { host: string; error: string }[] }).hosts;
    expect(hosts.map((h) => h.error)).toEqual([
      `closed: connect: cannot connect to 127.0.0.1:${port}: ECONNREFUSED (connection refused: nothing listens there, or a firewall rejects it)`,
      `nokey: auth: cannot read private key ${join(dir, 'missing')}: ENOENT`,
    ]);
    // Had the connection to "nokey" stayed open, decom would still be waiting for it.
    expect(Date.now() - started).toBeLessThan(10_000);
    // The text says it one line per host, naming the host once.
    expect(text.code).toBe(3);
    expect(text.stdout.split('\n').filter((l) => l.includes('NOT CHECKED'))).toEqual([
      `closed: NOT CHECKED: connect: cannot connect to 127.0.0.1:${port}: ECONNREFUSED (connection refused: nothing listens there, or a firewall rejects it)`,
      `nokey: NOT CHECKED: auth: cannot read private key ${join(dir, 'missing')}: ENOENT`,
    ]);
  });
});

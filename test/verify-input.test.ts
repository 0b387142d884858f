import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decom } from './helpers/sandbox.js';

// What the user sees for bad input to `decom verify`: one line naming the file,
// line, column and field (or the nearest names), exit 2, no stack trace.
const dir = mkdtempSync(join(tmpdir(), 'decom-verify-input-'));
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

  it('refuses an unknown output format', () => {
    const r = decom(['verify', good, 'all', '--output', 'yaml']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("argument 'yaml' is invalid. Allowed choices are text, json.");
  });
});

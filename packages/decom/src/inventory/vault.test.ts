// ansible-vault as decom opens it (src/inventory/vault.ts): texts made by Debian's ansible-vault,
// committed in test/fixtures/vault/ (format 1.1 with the password "correct horse", 1.2 with the
// vault IDs prod and ops and the password "battery staple"), and one made now by the installed
// ansible-vault; the passwords from files, scripts, the environment and ansible.cfg; an inventory
// whose group_vars and host_vars are vaulted; a wrong password as one line, exit 2, no secret in it.
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { UserError } from '../util/errors.js';
import { fileTree, tempDir } from '../../test/helpers/temp.js';
import { loadInventory } from './index.js';
import { decryptVault, VaultError, vaultSecrets, type VaultSecret } from './vault.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test', 'fixtures', 'vault');
const TMP = tempDir('decom-vault-test-');
afterAll(() => rmSync(TMP, { recursive: true, force: true }));
afterEach(() => vi.unstubAllEnvs());

const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');
/** The envelope of a `name: !vault |` file, as the YAML block holds it. */
const inline = (name: string) => fixture(name).split('\n').slice(1).map((l) => l.trim()).join('\n');
const secret = (password: string, label = 'default'): VaultSecret => ({ label, password: Buffer.from(password), source: 'test' });

let n = 0;
const tree = (files: Record<string, string>): string => fileTree(join(TMP, `case${++n}`), files);

describe('decrypting what ansible-vault made', () => {
  it('format 1.1, and 1.2 with its vault ID tried first', () => {
    expect(decryptVault(inline('inline-1.1.yml'), [secret('correct horse')])).toBe('S3cr3t pass');
    expect(decryptVault(inline('inline-1.2-prod.yml'), [secret('correct horse'), secret('battery staple', 'prod')])).toBe('become-pw-2');
    expect(decryptVault(fixture('whole-1.2-ops.yml'), [secret('battery staple', 'other')])).toBe('ansible_become_password: "vaulted become"\nansible_user: deploy\n');
    expect(decryptVault(fixture('whole-1.1.yml'), [secret('correct horse')])).toBe('ansible_port: 2222\n');
  });

  it('a text the installed ansible-vault makes now', () => {
    const value = `fresh-${Math.random().toString(36).slice(2)}`;
    const pw = join(tree({ pw: 'made now\n' }), 'pw');
    // Its home a temp dir: ansible-vault writes ~/.ansible, never the real home's.
    const env = { ...process.env, HOME: dirname(pw), ANSIBLE_CONFIG: join(dirname(pw), 'none') };
    const made = execFileSync('ansible-vault', ['encrypt_string', '--vault-id', `now@${pw}`, value], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], env });
    const envelope = made.split('\n').slice(1).map((l) => l.trim()).join('\n');
    expect(envelope).toMatch(/^\$ANSIBLE_VAULT;1\.2;AES256;now\n/);
    expect(decryptVault(envelope, [secret('made now', 'now')])).toBe(value);
  });

  it('a wrong password, or none: a message that names the vault IDs, never a password', () => {
    const wrong = () => decryptVault(inline('inline-1.2-prod.yml'), [secret('hunter2'), secret('hunter3', 'dev')]);
    expect(wrong).toThrow(VaultError);
    expect(wrong).toThrow('cannot be decrypted with the vault passwords given (vault IDs default, dev; it was encrypted for prod)');
    expect(() => decryptVault(inline('inline-1.1.yml'), [])).toThrow(/no vault password was given \(--vault-password-file, --vault-id, --ask-vault-pass\)/);
    expect(() => decryptVault('$ANSIBLE_VAULT;1.0;AES\n00', [secret('x')])).toThrow(/an ansible-vault format decom does not read/);
  });
});

describe('vault passwords, from where Ansible takes them', () => {
  it('a file (stripped), an executable (its stdout), a -client script asked for its label, labels', async () => {
    const dir = tree({ file: '  correct horse \n', 'pass.sh': '#!/bin/sh\necho battery staple\n', 'id-client.sh': '#!/bin/sh\n[ "$1 $2" = "--vault-id prod" ] && echo client-said\n' });
    chmodSync(join(dir, 'pass.sh'), 0o755);
    chmodSync(join(dir, 'id-client.sh'), 0o755);
    const secrets = await vaultSecrets({ passwordFiles: [join(dir, 'file')], vaultIds: [`ops@${join(dir, 'pass.sh')}`, `prod@${join(dir, 'id-client.sh')}`] });
    expect(secrets.map((s) => [s.label, s.password.toString()])).toEqual([
      ['ops', 'battery staple'],
      ['prod', 'client-said'],
      ['default', 'correct horse'],
    ]);
  });

  it('ANSIBLE_VAULT_PASSWORD_FILE and ansible.cfg open an inventory with no flag', async () => {
    const dir = tree({ pw: 'correct horse\n', 'hosts.ini': '[k]\nnode1\n', 'host_vars/node1.yml': fixture('whole-1.1.yml'), 'ansible.cfg': '[defaults]\nvault_password_file = DIR/pw\n' });
    vi.stubEnv('ANSIBLE_CONFIG', join(dir, 'ansible.cfg'));
    expect((await loadInventory(join(dir, 'hosts.ini'))).hosts.get('node1')!.port).toBe(2222);
    vi.stubEnv('ANSIBLE_CONFIG', join(dir, 'none'));
    vi.stubEnv('ANSIBLE_VAULT_PASSWORD_FILE', join(dir, 'pw'));
    expect((await loadInventory(join(dir, 'hosts.ini'))).hosts.get('node1')!.port).toBe(2222);
  });

  it('a missing or empty password file, a failing script: one line each', async () => {
    const dir = tree({ empty: '\n', 'fail.sh': '#!/bin/sh\nexit 3\n' });
    chmodSync(join(dir, 'fail.sh'), 0o755);
    await expect(vaultSecrets({ passwordFiles: [join(dir, 'missing')] })).rejects.toThrow(`vault password file ${join(dir, 'missing')}: not found`);
    await expect(vaultSecrets({ passwordFiles: [join(dir, 'empty')] })).rejects.toThrow(`vault password file ${join(dir, 'empty')} is empty`);
    await expect(vaultSecrets({ vaultIds: [join(dir, 'fail.sh')] })).rejects.toThrow(`vault password script ${join(dir, 'fail.sh')} exited 3`);
  });
});

describe('an inventory kept with ansible-vault', () => {
  const files = () => ({
    'hosts.yaml': 'all:\n  children:\n    kube_node:\n      hosts:\n        node1: {ansible_become: true}\n',
    // a whole encrypted file (vault ID ops) and an inline value (vault ID prod), as kubespray users keep them
    'group_vars/kube_node.yml': fixture('whole-1.2-ops.yml'),
    'host_vars/node1.yml': fixture('inline-1.2-prod.yml'),
    pw: 'battery staple\n',
  });

  it('opens whole files and !vault values with --vault-id', async () => {
    const dir = tree(files());
    vi.stubEnv('ANSIBLE_CONFIG', join(dir, 'none'));
    const inv = await loadInventory(join(dir, 'hosts.yaml'), { vault: { vaultIds: [`prod@${join(dir, 'pw')}`, `ops@${join(dir, 'pw')}`] } });
    // host_vars' inline value over group_vars' file, as Ansible merges them
    expect(inv.hosts.get('node1')).toMatchObject({ user: 'deploy', become: true, becomePassword: 'become-pw-2' });
  });

  it('a wrong vault password: one line naming the file, exit 2, no password in it', async () => {
    const dir = tree({ ...files(), pw: 'hunter2\n' });
    vi.stubEnv('ANSIBLE_CONFIG', join(dir, 'none'));
    const e = await loadInventory(join(dir, 'hosts.yaml'), { vault: { passwordFiles: [join(dir, 'pw')] } }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(UserError);
    expect((e as UserError).exitCode).toBe(2);
    expect((e as UserError).message).toBe(
      `${join(dir, 'group_vars/kube_node.yml')}: cannot be decrypted with the vault password given (vault ID default; it was encrypted for ops)`,
    );
    expect((e as UserError).message).not.toMatch(/hunter2|battery|vaulted become/);
  });

  it('an inline value that cannot be opened names its file, line and field when it is read', async () => {
    const dir = tree({ 'hosts.yaml': 'all:\n  hosts:\n    node1: {}\n', 'host_vars/node1.yml': fixture('inline-1.2-prod.yml'), pw: 'hunter2\n' });
    vi.stubEnv('ANSIBLE_CONFIG', join(dir, 'none'));
    await expect(loadInventory(join(dir, 'hosts.yaml'), { vault: { passwordFiles: [join(dir, 'pw')] } })).rejects.toThrow(
      new RegExp(`^${join(dir, 'host_vars/node1.yml')}:1:\\d+: ansible_become_password: cannot be decrypted`),
    );
  });
});

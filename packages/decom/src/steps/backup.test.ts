// The backup's copy to the operator on a backup dir of this machine's (the "node" is a
// temp dir, its scripts run by sh): only regular files and dirs come across, and a link,
// a device, a name holding ".." or a SHA256SUMS name that is not a plain file name is
// refused, named in one line, and not written.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StepContext } from '../engine/step.js';
import { tempDir } from '../../test/helpers/temp.js';
import { NODE_BACKUPS } from '../util/confine.js';
import { backup, refusedMember } from './backup.js';

const sh = (script: string): string => execFileSync('sh', ['-c', script], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });

/** A node's backup dir as the plan leaves it (files, SHA256SUMS), with `extra` run in it after the sums are taken. */
function nodeBackup(extra = ''): { ctx: StepContext; node: string; operator: string; exec: (script: string) => Promise<string> } {
  const root = tempDir('decom-backup-copy-');
  // The node's scripts delete only below decom's backups dir (util/confine.ts): here, the temp dir's node/.
  const exec = async (script: string) => sh(script.replaceAll(`'${NODE_BACKUPS}'`, `'${join(root, 'node')}'`));
  const node = join(root, 'node', 'RUN');
  const operator = join(root, 'operator', 'backups', 'RUN', 'n1');
  mkdirSync(node, { recursive: true });
  writeFileSync(join(node, 'iptables-nft-v4.rules'), '*filter\n:KUBE-SERVICES - [0:0]\nCOMMIT\n');
  sh(`cd '${node}' && head -c 9000000 /dev/urandom > files.tar.gz && sha256sum -- * > SHA256SUMS && ${extra || 'true'}`);
  const ctx: StepContext = { runId: 'RUN', backupDir: node, host: 'n1', vars: {}, params: {}, operatorBackupDir: operator, before: new Set() };
  return { ctx, node, operator, exec };
}

describe("the backup's copy to the operator", () => {
  it('copies a backup of more than one chunk, checked by its sums, and leaves no transfer archive on either side', async () => {
    const { ctx, node, operator, exec } = nodeBackup();
    expect(await backup.afterApply!(exec, ctx)).toBe(`copied and checked 2 files to ${operator}`);
    expect(readdirSync(operator).sort()).toEqual(['README.txt', 'SHA256SUMS', 'files.tar.gz', 'iptables-nft-v4.rules']);
    expect(readFileSync(join(operator, 'files.tar.gz')).equals(readFileSync(join(node, 'files.tar.gz')))).toBe(true);
    expect(lstatSync(operator).mode & 0o777).toBe(0o700);
    expect(readdirSync(node)).not.toContain('transfer.tar');
    expect(readdirSync(dirname(operator))).toEqual(['n1']);
  });

  it('refuses a symlink, a hard link, a FIFO and a SHA256SUMS name ../x: one line names each, none is written, nor x beside the copy', async () => {
    const { ctx, operator, exec } = nodeBackup(`ln -s /etc/shadow leak && ln iptables-nft-v4.rules hard && mkfifo pipe`);
    writeFileSync(join(ctx.backupDir, 'SHA256SUMS'), `${'0'.repeat(64)}  ../x\n`, { flag: 'a' });
    const failed = backup.afterApply!(exec, ctx);
    await expect(failed).rejects.toThrow(
      `the copy of the node's backup refuses "./hard" (a hard link to "./iptables-nft-v4.rules"), "./leak" (a symbolic link to "/etc/shadow"), "./pipe" (a FIFO member, not a file or dir), SHA256SUMS's name "../x" (not a plain file name): none of it is in ${operator}`,
    );
    expect(readdirSync(operator).sort()).toEqual(['SHA256SUMS', 'files.tar.gz', 'iptables-nft-v4.rules']);
    expect(existsSync(join(operator, '..', 'x'))).toBe(false);
    expect(String(await failed.catch((e: Error) => e.message)).split('\n')).toHaveLength(1);
  });

  it('judges each member by its type and name', () => {
    expect(refusedMember('./files.tar.gz', 'File')).toBeUndefined();
    expect(refusedMember('./', 'Directory')).toBeUndefined();
    expect(refusedMember('/etc/cron.d/x', 'File')).toBe('"/etc/cron.d/x" (an absolute name)');
    expect(refusedMember('./a/../../x', 'File')).toBe('"./a/../../x" (a name holding "..")');
    expect(refusedMember('./sda', 'BlockDevice')).toBe('"./sda" (a BlockDevice member, not a file or dir)');
  });
});

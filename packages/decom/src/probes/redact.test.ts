// Credential flags' values out of command lines (probes/redact.ts): every form a flag
// takes (one dash or two, `=` or two words, a title rewritten in place), the names that
// are not credentials, and parseProcs handing every reader the redacted line while the
// flags decom reads (etcd's, kube-proxy's, the shims') still read.
import { describe, expect, it } from 'vitest';
import { REDACTED } from '../inventory/types.js';
import { parseProcs } from './parse.js';
import { procFlag } from './proc-flags.js';
import { redactArgv } from './redact.js';

const line = (...argv: string[]) => redactArgv(argv).join(' ');

describe('redactArgv', () => {
  it.each(['token', 'password', 'secret', 'client-key-data', 'bootstrap-token', 'etcd-password', 'auth-token', 'shared-secret', 'tls-private-secret'])(
    '--%s and -%s, in = form and two-word form: the value goes, the program and the name stay',
    (name) => {
      for (const dashes of ['--', '-']) {
        const flag = `${dashes}${name}`;
        expect(line('/usr/local/bin/kubelet', `${flag}=zq-S3CRET`, '--v=2')).toBe(`/usr/local/bin/kubelet ${flag}=${REDACTED} --v=2`);
        expect(line('/usr/local/bin/kubelet', flag, 'zq-S3CRET', '--v=2')).toBe(`/usr/local/bin/kubelet ${flag} ${REDACTED} --v=2`);
      }
    },
  );

  it('matches a name whole and case aside: a file path is not a secret', () => {
    const kept = ['--key-file=/etc/kubernetes/pki/apiserver.key', '--token-file=/etc/token.csv', '--password-file', '/etc/p', '--tokens=3', '--secretive', 'x', '--tokenizer=y', '--kubeconfig=/etc/kubernetes/kubelet.conf'];
    expect(redactArgv(['etcd', ...kept])).toEqual(['etcd', ...kept]);
    expect(line('x', '--TOKEN=abc', '--Client-Key-Data', 'LS0t')).toBe(`x --TOKEN=${REDACTED} --Client-Key-Data ${REDACTED}`);
  });

  it("takes the next argument as the value whatever it is, as Go's flag package does, and the whole of an = value", () => {
    expect(line('p', '--password', '-dash-first', '--data-dir=/var/lib/etcd')).toBe(`p --password ${REDACTED} --data-dir=/var/lib/etcd`);
    expect(line('p', '--secret=two words')).toBe(`p --secret=${REDACTED}`);
    expect(line('p', '--token', 'two words')).toBe(`p --token ${REDACTED}`);
    expect(line('p', '--token')).toBe('p --token'); // no value (cut on the node, or none given): nothing to redact
    expect(line('p', '--token=')).toBe('p --token=');
  });

  it("finds the flags among the words of one argument: a title rewritten in place, a shell's script", () => {
    expect(line('kubelet --token=zq-1 --bootstrap-token zq-2 -password\tzq-3 --key-file=/etc/k')).toBe(
      `kubelet --token=${REDACTED} --bootstrap-token ${REDACTED} -password\t${REDACTED} --key-file=/etc/k`,
    );
    expect(line('/bin/sh', '-c', 'exec etcd --peer-secret "$S" --name m1')).toBe(`/bin/sh -c exec etcd --peer-secret ${REDACTED} --name m1`);
  });
});

describe('parseProcs', () => {
  const stat = (pids: number[]) => pids.map((pid) => `/proc/${pid}/stat:${pid} (x) S 1 ${pid} ${pid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 ${pid * 10} 0\n`).join('');
  const cmdline = (argvs: Record<number, string[]>) => Object.entries(argvs).map(([pid, argv]) => `/proc/${pid}/cmdline:${argv.join('\0')}\0\n`).join('');

  it('gives every reader the redacted line, and the flags decom reads still read', () => {
    const procs = parseProcs(
      stat([10, 20, 30, 40]),
      cmdline({
        10: ['/usr/local/bin/kubelet', '--token=zq-S3CRET-tok', '--kubeconfig=/etc/kubernetes/kubelet.conf'],
        20: ['etcd', '--auth-token', 'simple', '--data-dir', '/var/lib/etcd', '-name', 'm1', '--client-key-data=LS0tS0VZ'],
        30: ['kube-proxy', '--proxy-mode=ipvs', '-password', 'zq-S3CRET-pw'],
        40: ['kubelet --token zq-S3CRET-title'],
      }),
    );
    const all = JSON.stringify([...procs.values()]);
    expect(all).not.toMatch(/zq-S3CRET|simple|LS0t/);
    expect(procs.get(10)).toMatchObject({ name: 'kubelet', args: `/usr/local/bin/kubelet --token=${REDACTED} --kubeconfig=/etc/kubernetes/kubelet.conf` });
    expect(procs.get(40)).toMatchObject({ name: 'kubelet', args: `kubelet --token ${REDACTED}` });
    const etcd = procs.get(20)!;
    expect([procFlag(etcd, 'data-dir'), procFlag(etcd, 'name'), procFlag(etcd, 'auth-token')]).toEqual(['/var/lib/etcd', 'm1', REDACTED]);
    expect(procFlag(procs.get(30)!, 'proxy-mode')).toBe('ipvs');
  });
});

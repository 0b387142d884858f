// `decom run` on bad input, through the built CLI. Bad input is refused before any host is
// contacted: the inventory's addresses (198.18.0.201 and up: a sandbox's nodes take .11
// upward, one each, and no test boots 190) are never reached; exit 2, one line, no stack.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decom } from '../../test/helpers/sandbox.js';
import { tempDir } from '../../test/helpers/temp.js';
import { kubeconfigOrder } from '../cluster/kubeconfig.js';

const dir = tempDir('decom-run-input-');
const inventory = join(dir, 'hosts.yaml');
writeFileSync(
  inventory,
  `all:
  hosts:
    node1: {ansible_host: 198.18.0.201}
    node2: {ansible_host: 198.18.0.202}
  children:
    workers:
      hosts: {node1: {}, node2: {}}
`,
);
const book = (name: string, text: string) => {
  const f = join(dir, name);
  writeFileSync(f, text);
  return f;
};
const run = (...args: string[]) => decom(['run', inventory, ...args, '--state-dir', join(dir, 'state')]);

function refused(r: { code: number; stdout: string; stderr: string }, message: RegExp): void {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
  expect(r.stdout).toBe('');
}

describe('decom run: bad input', () => {
  it('the decommission (the default) needs a kubeconfig, a known --context, and a duration for --drain-timeout', () => {
    const none = { env: { KUBECONFIG: '', HOME: dir } };
    const cli = (...args: string[]) => decom(['run', inventory, ...args, '--state-dir', join(dir, 'state')], none);
    const noKubeconfig = cli('node1', '--yes');
    refused(noKubeconfig, /decommission\.yaml works on the cluster through its API, and no kubeconfig was found.*--playbook reset/);
    // The places searched, named in the code's order (KUBECONFIG_ORDER).
    expect(noKubeconfig.stderr).toContain(`no kubeconfig was found (${kubeconfigOrder()});`);
    const kc = book('kubeconfig', 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://198.18.0.254:6443"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: here, context: {cluster: c, user: u}}]\ncurrent-context: here\n');
    refused(cli('node1', '--yes', '--kubeconfig', kc, '--context', 'there'), /--context there: no such context in .*kubeconfig \(it has here\)/);
    refused(cli('node1', '--yes', '--kubeconfig', kc, '--drain-timeout', '5 minutes'), /--drain-timeout "5 minutes": expected a duration such as 300, 90s, 5m or 1h/);
    refused(cli('node1', '--yes', '--kubeconfig', kc, '--keep-installed', '--purge'), /--keep-installed and --purge contradict/);
    refused(cli('node1', '--yes', '--kubeconfig', kc, '--playbook', 'reset', '--force', '--keep-installed'), /--force, --keep-installed: only for playbooks with cluster steps/);
    // The reset's Node check and the operator's CA take --context too: one that is not there is refused before any host is contacted.
    refused(cli('node1', '--yes', '--kubeconfig', kc, '--playbook', 'reset', '--context', 'there'), /^decom: --context there: no such context in .*kubeconfig \(it has here\)\n$/);
    refused(cli('node1', '--check', '--kubeconfig', kc, '--playbook', 'reset', '--context', 'there'), /^decom: --context there: no such context in .*kubeconfig \(it has here\)\n$/);
    // An API server on a host the run removes: refused before any host is contacted (exit 4).
    const local = book('kubeconfig-local', 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://198.18.0.201:6443"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: here, context: {cluster: c, user: u}}]\ncurrent-context: here\n');
    const stacked = cli('node1', '--yes', '--kubeconfig', local);
    expect([stacked.code, stacked.stderr.trim()]).toEqual([4, "decom: the cluster's API at https://198.18.0.201:6443 is on node1, which this run removes: its Node could not be deleted once its control plane is gone; reach the API through another control plane or the load balancer (--kubeconfig, --context)"]);
    // $KUBECONFIG's files are merged as kubectl merges them (a missing one ignored): the contexts of both are there.
    const other = book('kubeconfig-2', 'apiVersion: v1\nkind: Config\nclusters: [{name: c2, cluster: {server: "https://198.18.0.253:6443"}}]\nusers: [{name: u2, user: {token: t}}]\ncontexts: [{name: there, context: {cluster: c2, user: u2}}]\n');
    const merged = decom(['run', inventory, 'node1', '--yes', '--context', 'nowhere', '--state-dir', join(dir, 'state')], { env: { KUBECONFIG: `${kc}:${join(dir, 'missing')}:${other}`, HOME: dir } });
    refused(merged, /--context nowhere: no such context in .*kubeconfig\+.*kubeconfig-2 \(it has here, there\)/);
  });

  it('refuses a group or "all" without --allow-many', () => {
    refused(run('workers', '--playbook', 'reset', '--yes'), /"workers" names several hosts.*--allow-many/);
    refused(run('all', '--playbook', 'reset', '--yes'), /"all" names several hosts/);
  });

  it('refuses to go on without a terminal to confirm on, unless --yes', () => {
    refused(run('node1', '--playbook', 'reset'), /without confirmation: no terminal to ask on; pass --yes/);
  });

  it('names unknown shipped playbooks and the shipped ones', () => {
    refused(run('node1', '--playbook', 'rest', '--yes'), /rest.*reset/);
  });

  it('points at the file, line, column and field of a playbook error', () => {
    const f = book('bad.yaml', 'apiVersion: decom/v1\nkind: Playbook\nsteps:\n  - backup\n  - step: static-pods\n    with: {timeoutSec: soon}\n');
    refused(run('node1', '--playbook', f, '--yes'), new RegExp(`${f}:6:24: steps\\[1\\]\\.with\\.timeoutSec`));
    const typo = book('typo.yaml', 'apiVersion: decom/v1\nkind: Playbook\nsteps:\n  - firewal\n');
    refused(run('node1', '--playbook', typo, '--yes'), /typo\.yaml:4:5: .*firewal.*firewall/);
  });

  it('refuses bad numbers, unknown tags and a when: on an undefined variable', () => {
    refused(run('node1', '--playbook', 'reset', '--yes', '--forks', '0'), /--forks "0"/);
    refused(run('node1', '--playbook', 'reset', '--yes', '--serial', '150%'), /--serial 150%/);
    refused(run('node1', '--playbook', 'reset', '--yes', '--tags', 'nosuch'), /no step .* has the tag nosuch/);
    const f = book('when.yaml', 'apiVersion: decom/v1\nkind: Playbook\nsteps:\n  - name: extra\n    shell: "true"\n    when: wipe_docker | bool\n');
    refused(run('node1', '--playbook', f, '--yes'), /node1: .*wipe_docker/);
  });
});

// A network namespace of a test file's own (ownNetns), made and removed by name, for the
// tests that run real commands in one.
import { spawnSync } from 'node:child_process';

/**
 * A network namespace of the calling test file's own, by its exact name (this
 * process's PID in it): the host's network and firewall are never touched. `make`
 * (before each test) removes a leftover of a killed run first; `remove` (after each)
 * removes it by name. `run` is sh -c CMD in it; stderr alone (iptables-nft's "legacy
 * tables present" warning) is not a failure.
 */
export function ownNetns(prefix: string): { name: string; make: () => void; remove: () => void; run: (cmd: string, input?: string) => string } {
  const name = `${prefix}-${process.pid}`;
  const remove = () => void spawnSync('ip', ['netns', 'del', name]);
  const make = () => {
    remove();
    const r = spawnSync('ip', ['netns', 'add', name], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ip netns add ${name}: ${r.stderr}`);
  };
  const run = (cmd: string, input?: string): string => {
    const r = spawnSync('ip', ['netns', 'exec', name, 'sh', '-c', cmd], { input, encoding: 'utf8', maxBuffer: 1 << 30 });
    if (r.status !== 0) throw new Error(`${cmd}: exit ${r.status}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    return r.stdout;
  };
  return { name, make, remove, run };
}

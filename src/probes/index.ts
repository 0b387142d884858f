import { randomBytes } from 'node:crypto';
import type { Transport } from '../transport/types.js';
import { TransportError } from '../transport/types.js';
import { probeScript } from './script.js';
import {
  parseCgroups, parseCrictl, parseCtr, parseDocker, parseIpvs, parseIptablesSave, parseLinks, parseMeta,
  parseMountinfo, parseNetns, parseNftTables, parsePaths, parseProcs, parseSs, parseSystemctlShow, splitSections,
} from './parse.js';
import type { NodeState } from './state.js';

export type { NodeState } from './state.js';

/** One probe run's sections (see splitSections) as a NodeState. Pure. */
function fromSections(s: Map<string, string>): NodeState {
  const get = (name: string) => s.get(name) ?? '';
  const meta = parseMeta(get('meta'));
  const crictl = meta.tools.has('crictl') && get('crictl-pods').trim() !== '';
  const processes = parseProcs(get('stat'), get('cmdline'));
  return {
    ...meta,
    paths: parsePaths(get('paths')),
    processes,
    k8sCgroups: parseCgroups(get('cgroups')),
    listeners: parseSs(get('listen')),
    mounts: parseMountinfo(get('mountinfo')),
    netns: parseNetns(get('netns')),
    links: parseLinks(get('links')),
    iptables: [
      ...parseIptablesSave(get('iptables-nft'), 'nft', 4),
      ...parseIptablesSave(get('ip6tables-nft'), 'nft', 6),
      ...parseIptablesSave(get('iptables-legacy'), 'legacy', 4),
      ...parseIptablesSave(get('ip6tables-legacy'), 'legacy', 6),
    ],
    nftTables: parseNftTables(get('nft-tables')),
    ipvs: parseIpvs(get('ipvs')),
    units: parseSystemctlShow(get('systemd')),
    containers: [
      ...(crictl
        ? parseCrictl(get('crictl-pods'), get('crictl-containers'))
        : parseCtr(get('ctr-containers'), get('task-bundles'), processes)),
      ...parseDocker(get('docker')),
    ],
  };
}

/** One exec, one round trip: everything decom needs to know about the node. */
export async function probeNode(t: Transport, opts: { sudo?: boolean; timeoutSec?: number } = {}): Promise<NodeState> {
  const nonce = randomBytes(8).toString('hex');
  const r = await t.exec(probeScript(nonce), { sudo: opts.sudo, timeoutSec: opts.timeoutSec ?? 60 });
  const sections = splitSections(r.stdout, nonce);
  if (!sections.has('end')) {
    const why =
      r.code === 124
        ? 'the probe timed out on the node'
        : r.code === 0 && r.stdout.includes(`@@decom-${nonce} key \n`)
          ? 'the probe could not read /proc/sys/kernel/random/uuid, which marks its output'
          : `the probe did not finish (exit ${r.code})`;
    throw new TransportError(t.host, 'exec', `${why}${r.stderr.trim() ? `: ${r.stderr.trim().split('\n').slice(-1)[0]}` : ''}`);
  }
  return fromSections(sections);
}

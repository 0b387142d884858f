// verify's start-up overlapped with its hosts' (verify/cli.ts): a host of the pool's first wave is
// dialed as soon as its own `ssh -G` answers (inventory/reach.ts onReached, transport/connector.ts
// EarlyDials), while a slower host's still runs; the socket dialed is the one its connection takes.
// A local TCP server stands for the nodes' sshd; `ssh -G` is the real one, one host's made slow.
import { chmodSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileTree, tempDir } from '../../test/helpers/temp.js';
import { loadInventory, reachHosts, type Host } from '../inventory/index.js';
import { EarlyDials, type ConnectFlags } from '../transport/connector.js';

const TMP = tempDir('decom-early-dial-test-');
const SLOW_SSH_G_MS = 1000;
let server: Server;
let port: number;
/** When the server took each connection (ms since the epoch), and the connections. */
const accepted: number[] = [];
const sockets: Socket[] = [];

beforeAll(async () => {
  server = createServer((s) => {
    accepted.push(Date.now());
    sockets.push(s);
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
  rmSync(TMP, { recursive: true, force: true });
});

const FLAGS: ConnectFlags = { connection: 'ssh', acceptNewHostKeys: false };

/** The inventory's hosts: `fast` on the server, `slow` whose ssh -G takes SLOW_SSH_G_MS; and the ssh that makes it so. */
async function hosts(): Promise<{ hosts: Host[]; ssh: string }> {
  const dir = fileTree(join(TMP, 'case'), {
    ssh_config: '',
    'hosts.ini': [
      '[kube_node]',
      `fast ansible_host=127.0.0.1 ansible_port=${port}`,
      `slow ansible_host=127.0.0.2 ansible_port=${port}`,
      '[all:vars]',
      `ansible_user=root`,
      `ansible_ssh_common_args="-F ${join(TMP, 'case', 'ssh_config')}"`,
      '',
    ].join('\n'),
    ssh: `#!/bin/sh\ncase "$*" in *127.0.0.2*) sleep ${SLOW_SSH_G_MS / 1000};; esac\nexec ssh "$@"\n`,
  });
  chmodSync(join(dir, 'ssh'), 0o755);
  const inventory = await loadInventory(join(dir, 'hosts.ini'));
  return { hosts: [...inventory.hosts.values()], ssh: join(dir, 'ssh') };
}

describe('the pool\'s first wave dialed as each host is reached', () => {
  it('dials a host as soon as its ssh -G answers, a slower host\'s still running; its first connection takes that socket', async () => {
    const { hosts: targeted, ssh } = await hosts();
    const early = new EarlyDials<Host>(FLAGS);
    const told: string[] = [];
    const before = accepted.length;
    const reached = await reachHosts(targeted, { ssh, onReached: (h, i) => (told.push(`${i}:${h.name}`), early.dial(h)) });
    const done = Date.now();
    expect(told).toEqual(['0:fast', '1:slow']);
    // fast's connection was taken by the server while slow's ssh -G still ran.
    expect(accepted.length).toBeGreaterThan(before);
    expect(done - accepted[before]!).toBeGreaterThan(SLOW_SSH_G_MS / 2);
    const fast = reached.find((h) => h.name === 'fast')!;
    const socket = early.take(fast);
    expect(socket?.sock.remotePort).toBe(port);
    expect(socket?.sock.destroyed).toBe(false);
    // Served once: a second connection of the host dials anew.
    expect(early.take(fast)).toBeUndefined();
    socket?.sock.destroy();
    early.close();
  });

  it('dials nothing for a host through a jump host or a ProxyCommand, nor twice; a host whose address changed is dialed anew; close ends what no host took', async () => {
    const { hosts: targeted } = await hosts();
    const fast = targeted.find((h) => h.name === 'fast')!;
    const early = new EarlyDials<Host>(FLAGS);
    const before = accepted.length;
    early.dial({ ...fast, name: 'jumped', proxyJump: ['bastion'] });
    early.dial({ ...fast, name: 'proxied', proxyCommand: 'nc %h %p' });
    early.dial({ ...fast, name: 'local', connection: 'local' });
    early.dial(fast);
    early.dial(fast);
    early.dial({ ...fast, name: 'moved' });
    await new Promise((r) => setTimeout(r, 200));
    expect(accepted.length - before).toBe(2); // fast once, moved
    expect(early.take({ ...fast, name: 'jumped', proxyJump: ['bastion'] })).toBeUndefined();
    expect(early.take({ ...fast, name: 'moved', port: port + 1 })).toBeUndefined();
    const kept = early.take(fast)!;
    early.close();
    expect(kept.sock.destroyed).toBe(false);
    kept.sock.destroy();
    // Closed (a failure before connecting): a host reached after it is not dialed.
    early.dial({ ...fast, name: 'late' });
    // --connection local dials nothing.
    const local = new EarlyDials<Host>({ ...FLAGS, connection: 'local' });
    local.dial(fast);
    await new Promise((r) => setTimeout(r, 100));
    expect(accepted.length - before).toBe(2);
  });
});

/**
 * Docker's API on a cri-dockerd node, reached through the host's SSH connection
 * (the socket forwarded, or bridged through sudo socat): no docker CLI needed on
 * the node, and every removal goes through the daemon, never its directories.
 */
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { NodeIo } from '../engine/step.js';

const DOCKER_SOCKET = '/var/run/docker.sock';

async function dockerApi(node: NodeIo): Promise<Docker> {
  const [{ default: Dockerode }, { Agent }] = await Promise.all([import('dockerode'), import('node:http')]);
  // Each request of the Docker API goes over a stream the host's connection opens.
  const agent = new Agent({ keepAlive: false });
  (agent as unknown as { createConnection: unknown }).createConnection = (_: unknown, cb: (e: Error | null, s?: Duplex) => void) => {
    node.openUnixSocket(DOCKER_SOCKET).then((sock) => cb(null, sock), (e: Error) => cb(e));
  };
  return new Dockerode({ protocol: 'http', host: 'docker', port: 80, agent } as ConstructorParameters<typeof Dockerode>[0]);
}

/** Removes containers (forced) or image references, one by one; one already gone is done. Says what went. */
export async function dockerRemove(node: NodeIo, what: 'containers' | 'images', names: string[]): Promise<string> {
  const docker = await dockerApi(node);
  const gone: string[] = [];
  for (const name of names) {
    const short = what === 'containers' ? name.slice(0, 12) : name;
    try {
      // An image reference is untagged; the image itself goes only with its last reference.
      if (what === 'containers') await docker.getContainer(name).remove({ force: true, v: false });
      else await docker.getImage(name).remove({});
      gone.push(short);
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) continue;
      throw new Error(`docker: removing ${short}: ${(e as Error).message}`);
    }
  }
  return `removed ${gone.join(' ') || 'nothing (already gone)'}`;
}

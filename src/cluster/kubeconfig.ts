import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { inputError } from '../util/errors.js';

/**
 * The kubeconfig the user gave, found as kubectl finds it: --kubeconfig, then
 * $KUBECONFIG, then ~/.kube/config. Undefined when there is none: the client
 * library would then silently target http://localhost:8080, which nobody means.
 */
export function kubeconfigPath(flag?: string): string | undefined {
  if (flag) {
    if (!existsSync(flag)) throw inputError(`--kubeconfig ${flag}: no such file`);
    return flag;
  }
  const env = process.env.KUBECONFIG?.split(':').find((p) => p && existsSync(p));
  if (env) return env;
  const home = join(homedir(), '.kube', 'config');
  return existsSync(home) ? home : undefined;
}

/** Loads the Kubernetes client lazily (~0.4 s): only commands that talk to the API pay for it. */
export async function coreApi(path: string) {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return { api: kc.makeApiClient(k8s.CoreV1Api), server: kc.getCurrentCluster()?.server ?? '(no server)' };
}

/** The typed clients the cluster side uses (core, apps, storage), from one kubeconfig; loaded lazily. */
export async function kubeClients(path: string) {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return { core: kc.makeApiClient(k8s.CoreV1Api), apps: kc.makeApiClient(k8s.AppsV1Api), storage: kc.makeApiClient(k8s.StorageV1Api), server: kc.getCurrentCluster()?.server ?? '(no server)' };
}

/**
 * What the operator's kubeconfig says the cluster is: the CA its current context
 * trusts (as a PEM body) and its API server. Read with the YAML parser, not the
 * client library: no API call, no 0.4 s load. Undefined when it names neither.
 */
export async function operatorIdentity(path: string): Promise<{ caBodies: string[]; servers: string[] } | undefined> {
  const [{ parse }, { readFileSync }, { dirname, resolve }, { pemBody }] = await Promise.all([
    import('yaml'), import('node:fs'), import('node:path'), import('../probes/parse.js'),
  ]);
  type Doc = { 'current-context'?: string; contexts?: { name?: string; context?: { cluster?: string } }[]; clusters?: { name?: string; cluster?: Record<string, string> }[] };
  let doc: Doc;
  try {
    doc = (parse(readFileSync(path, 'utf8')) ?? {}) as Doc;
  } catch {
    return undefined; // an unreadable kubeconfig is reported by the API check that uses it
  }
  const ctx = doc.contexts?.find((c) => c.name === doc['current-context'])?.context;
  // The current context's cluster; the only cluster only when no context is current.
  const cluster = doc['current-context'] ? doc.clusters?.find((c) => c.name === ctx?.cluster)?.cluster : doc.clusters?.length === 1 ? doc.clusters[0]?.cluster : undefined;
  if (!cluster) return undefined;
  const caData = cluster['certificate-authority-data'];
  const caFile = cluster['certificate-authority'];
  let pem = '';
  try {
    pem = caData ? Buffer.from(caData, 'base64').toString('utf8') : caFile ? readFileSync(resolve(dirname(path), caFile), 'utf8') : '';
  } catch {
    pem = '';
  }
  const body = pemBody(pem);
  const servers = cluster.server ? [cluster.server] : [];
  return body || servers.length ? { caBodies: body ? [body] : [], servers } : undefined;
}

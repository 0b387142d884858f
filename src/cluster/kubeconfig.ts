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

import type { Finding } from '../verify/rules.js';
import { coreApi } from './kubeconfig.js';

/** Per host name: findings (a Node object still there) and warnings (the API could not be asked). */
export interface NodeCheck {
  findings: Map<string, Finding[]>;
  warnings: Map<string, string[]>;
}

const statusOf = (e: unknown): number | undefined => (e as { code?: number })?.code;

/** Which of these names still have a Node object in the API (it re-registers a kubelet, and schedules pods). */
export async function registeredNodes(kubeconfig: string, names: string[]): Promise<NodeCheck> {
  const findings = new Map<string, Finding[]>();
  const warnings = new Map<string, string[]>();
  let client: Awaited<ReturnType<typeof coreApi>>;
  try {
    client = await coreApi(kubeconfig);
  } catch (e) {
    // A kubeconfig the client cannot use (no current context, a bad file) costs the API check, not the run.
    for (const name of names) warnings.set(name, [`could not use the kubeconfig ${kubeconfig}: ${(e as Error).message.split('\n')[0]}`]);
    return { findings, warnings };
  }
  const { api, server } = client;
  await Promise.all(
    names.map(async (name) => {
      try {
        const node = await api.readNode({ name });
        const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown';
        findings.set(name, [{ kind: 'node-object', subject: name, detail: `Node still registered at ${server} (Ready=${ready})` }]);
      } catch (e) {
        if (statusOf(e) === 404) return;
        warnings.set(name, [`could not ask ${server} for its Node object: ${(e as Error).message.split('\n')[0]}`]);
      }
    }),
  );
  return { findings, warnings };
}

/**
 * APIServices as kube-aggregator judges them. The sandbox serves one aggregated group
 * itself, standing in for metrics-server (resources.ts METRICS_APISERVICE); its
 * availability controller judges every APIService, failing that one's check while the
 * fault switch names it (behaviour.ts faultSwitch). Any APIService that names a service and
 * is not Available leaves its group version unavailable: listed Stale in discovery,
 * and every request under it answered as the aggregator's proxy answers it.
 */
import { faults } from './behaviour.js';
import { type Condition, setCondition } from './conditions.js';
import { METRICS_APISERVICE } from './resources.js';
import type { Store } from './store.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const available = (a: { status?: unknown }) => ((((a.status ?? {}) as Any).conditions ?? []) as Condition[]).some((c) => c.type === 'Available' && c.status === 'True');

/** The group versions of APIServices that name a service and are not Available. */
export function unavailableGroupVersions(store: Store): { group: string; version: string }[] {
  return store
    .list('apiservices')
    .filter((a) => (a.spec as Any | undefined)?.service && !available(a))
    .map((a) => ({ group: String((a.spec as Any).group ?? ''), version: String((a.spec as Any).version ?? '') }));
}

/** Whether a path is under an unavailable group version (/apis/GROUP/VERSION and below). */
export function unavailablePath(store: Store, path: string): boolean {
  const m = /^\/apis\/([^/]+)\/([^/]+)(\/|$)/.exec(path);
  return Boolean(m && unavailableGroupVersions(store).some((u) => u.group === m[1] && u.version === m[2]));
}

/**
 * The availability controller, one pass over every APIService: a local one (no
 * service) is always available; the one of the group the sandbox serves is Available
 * (Passed) unless the fault switch `apiServiceUnavailable` names it, when its discovery
 * check fails as against a metrics-server no longer listening; any other names a
 * Service the sandbox does not have (it has no Services), so it is ServiceNotFound.
 */
export function apiServiceAvailabilityController(store: Store): void {
  const names = (faults(store).apiServiceUnavailable ?? '').split(',').map((s) => s.trim());
  for (const a of store.list('apiservices')) {
    const spec = (a.spec ?? {}) as Any;
    const svc = spec.service as { namespace?: string; name?: string; port?: number } | undefined;
    // The Service's cluster IP the check dials (the sandbox has no Services: a fixed one of the service range).
    const url = `https://10.96.0.20:${svc?.port ?? 443}/apis/${spec.group}/${spec.version}`;
    const cond = !svc
      ? { type: 'Available', status: 'True', reason: 'Local', message: 'Local APIServices are always available' }
      : a.metadata.name !== METRICS_APISERVICE
        ? { type: 'Available', status: 'False', reason: 'ServiceNotFound', message: `service/${svc.name} in "${svc.namespace}" is not present` }
        : names.includes(a.metadata.name)
          ? { type: 'Available', status: 'False', reason: 'FailedDiscoveryCheck', message: `failing or missing response from ${url}: Get "${url}": dial tcp 10.96.0.20:${svc.port ?? 443}: connect: connection refused` }
          : { type: 'Available', status: 'True', reason: 'Passed', message: 'all checks passed' };
    const conditions = setCondition(((a.status ?? {}) as Any).conditions, cond);
    if (JSON.stringify(conditions) !== JSON.stringify(((a.status ?? {}) as Any).conditions)) store.update('apiservices', { ...a, status: { ...((a.status ?? {}) as Any), conditions } }, 'apiregistration.k8s.io');
  }
}

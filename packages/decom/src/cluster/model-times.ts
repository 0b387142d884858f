/**
 * The fields the client library's models hold as Date objects, where the API's JSON has
 * RFC 3339 strings: the one way its lists differ from plain JSON in what the audit reads
 * (its models have no renamed field, and the fields they leave out no rule reads). The
 * audit's plain HTTPS lists (https-api.ts) turn the same fields into Dates, so the rules
 * and the report see one value from either path. MicroTime fields (a Lease's renewTime)
 * the library leaves as strings, and so do these. audit/audit-plain-https.test.ts holds this table to
 * the library's own models (their attribute type maps), and both paths to one report.
 */

/** The models the audit lists in full (audit/cluster.ts), each with the paths of its Date fields ("[]": every item of an array). */
export const MODEL_TIMES = {
  V1Pod: [
    'metadata.creationTimestamp',
    'metadata.deletionTimestamp',
    'metadata.managedFields[].time',
    'spec.volumes[].ephemeral.volumeClaimTemplate.metadata.creationTimestamp',
    'spec.volumes[].ephemeral.volumeClaimTemplate.metadata.deletionTimestamp',
    'spec.volumes[].ephemeral.volumeClaimTemplate.metadata.managedFields[].time',
    'status.conditions[].lastProbeTime',
    'status.conditions[].lastTransitionTime',
    ...['containerStatuses', 'ephemeralContainerStatuses', 'initContainerStatuses'].flatMap((s) =>
      ['lastState', 'state'].flatMap((st) => [`status.${s}[].${st}.running.startedAt`, `status.${s}[].${st}.terminated.finishedAt`, `status.${s}[].${st}.terminated.startedAt`]),
    ),
    'status.startTime',
  ],
  V1Node: ['metadata.creationTimestamp', 'metadata.deletionTimestamp', 'metadata.managedFields[].time', 'spec.taints[].timeAdded', 'status.conditions[].lastHeartbeatTime', 'status.conditions[].lastTransitionTime'],
  V1Namespace: ['metadata.creationTimestamp', 'metadata.deletionTimestamp', 'metadata.managedFields[].time', 'status.conditions[].lastTransitionTime'],
  V1VolumeAttachment: ['metadata.creationTimestamp', 'metadata.deletionTimestamp', 'metadata.managedFields[].time', 'status.attachError.time', 'status.detachError.time'],
  V1PersistentVolume: ['metadata.creationTimestamp', 'metadata.deletionTimestamp', 'metadata.managedFields[].time', 'status.lastPhaseTransitionTime'],
  V1Lease: ['metadata.creationTimestamp', 'metadata.deletionTimestamp', 'metadata.managedFields[].time'],
  V1APIService: ['metadata.creationTimestamp', 'metadata.deletionTimestamp', 'metadata.managedFields[].time', 'status.conditions[].lastTransitionTime'],
} as const satisfies Record<string, readonly string[]>;
export type TimedModel = keyof typeof MODEL_TIMES;

/** Each path split into its steps once: ["status", "conditions[]", "lastTransitionTime"]. */
const STEPS: Record<TimedModel, string[][]> = Object.fromEntries(
  Object.entries(MODEL_TIMES).map(([model, paths]) => [model, (paths as readonly string[]).map((p) => p.split('.'))]),
) as Record<TimedModel, string[][]>;

type Any = Record<string, unknown>;

/** The string at the end of `steps` under `at`, as a Date (in place); anything else is left as it is, as the library leaves null. */
function revive(at: unknown, steps: string[], i: number): void {
  if (!at || typeof at !== 'object') return;
  const step = steps[i] as string;
  const many = step.endsWith('[]');
  const key = many ? step.slice(0, -2) : step;
  const value = (at as Any)[key];
  if (i === steps.length - 1) {
    if (typeof value === 'string') (at as Any)[key] = new Date(value);
    return;
  }
  if (many) for (const v of Array.isArray(value) ? value : []) revive(v, steps, i + 1);
  else revive(value, steps, i + 1);
}

/** One list item of `model`, parsed from the API's JSON, with its Date fields as the library's model holds them (changed in place). */
export function withModelTimes(model: TimedModel, item: unknown): unknown {
  for (const steps of STEPS[model]) revive(item, steps, 0);
  return item;
}

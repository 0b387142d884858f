/**
 * The messages of the protobuf bodies the sandbox API reads, by their field numbers in
 * k8s.io/api and k8s.io/apimachinery `generated.proto` (core/v1, batch/v1,
 * authentication/v1, policy/v1, meta/v1, resource, intstr). Numbers never change once
 * given, so a newer generated.proto answers for v1.32 too; fields added after v1.32
 * are left out (kubectl v1.32 never sends them).
 *
 * How a field reads (a Kind):
 *   's' 'i' 'b'      string, varint int (int32/int64), bool of a plain Go value: its zero
 *                    ("", 0, false) is what gogo-protobuf always writes for an unset field,
 *                    and JSON omits it, so it is dropped;
 *   's?' 'i?' 'b?'   the same behind a Go pointer: written only when set, zero kept
 *                    (backoffLimit: 0, suspend: false mean something);
 *   'ss' 'is'        repeated strings / ints (ints packed or not);
 *   'map'            map<string,string>;  'bmap'  map<string,bytes> (base64 in JSON);
 *   'qmap'           map<string, Quantity>;  'q'  a Quantity;
 *   'time'           meta/v1 Time (a zero Time is empty: omitted);
 *   'ios'            IntOrString {type=1, intVal=2, strVal=3}, a number or a string in JSON;
 *   'json'           FieldsV1 {Raw=1}, JSON bytes;
 *   Msg              a nested message (present even when empty, as Go's JSON writes a struct);
 *   {list: Msg}      repeated message;  {inline: Msg}  an embedded struct whose fields JSON
 *                    flattens into its parent (Volume's VolumeSource, LocalObjectReference…).
 */

export type Kind = 's' | 's?' | 'i' | 'i?' | 'b' | 'b?' | 'ss' | 'is' | 'map' | 'bmap' | 'qmap' | 'q' | 'time' | 'ios' | 'json' | Msg | { list: Msg } | { inline: Msg };
export interface Msg {
  name: string;
  fields: Record<number, [string, Kind]>;
}

const msg = (name: string, fields: Record<number, [string, Kind]>): Msg => ({ name, fields });
const list = (m: Msg) => ({ list: m });
const inline = (m: Msg) => ({ inline: m });

// --- k8s.io/apimachinery meta/v1 and runtime ----------------------------------------------

/** The TypeMeta of runtime.Unknown{typeMeta=1, raw=2}, the envelope after `k8s\0` (runtime/generated.proto: apiVersion=1, kind=2; not meta/v1's). */
export const RUNTIME_TYPE_META = msg('runtime.TypeMeta', { 1: ['apiVersion', 's'], 2: ['kind', 's'] });

const OWNER_REFERENCE = msg('OwnerReference', {
  1: ['kind', 's'], 3: ['name', 's'], 4: ['uid', 's'], 5: ['apiVersion', 's'], 6: ['controller', 'b?'], 7: ['blockOwnerDeletion', 'b?'],
});
const MANAGED_FIELDS = msg('ManagedFieldsEntry', {
  1: ['manager', 's'], 2: ['operation', 's'], 3: ['apiVersion', 's'], 4: ['time', 'time'], 6: ['fieldsType', 's'], 7: ['fieldsV1', 'json'], 8: ['subresource', 's'],
});
export const OBJECT_META = msg('ObjectMeta', {
  1: ['name', 's'], 2: ['generateName', 's'], 3: ['namespace', 's'], 4: ['selfLink', 's'], 5: ['uid', 's'], 6: ['resourceVersion', 's'],
  7: ['generation', 'i'], 8: ['creationTimestamp', 'time'], 9: ['deletionTimestamp', 'time'], 10: ['deletionGracePeriodSeconds', 'i?'],
  11: ['labels', 'map'], 12: ['annotations', 'map'], 13: ['ownerReferences', list(OWNER_REFERENCE)], 14: ['finalizers', 'ss'], 17: ['managedFields', list(MANAGED_FIELDS)],
});
const LABEL_SELECTOR = msg('LabelSelector', {
  1: ['matchLabels', 'map'],
  2: ['matchExpressions', list(msg('LabelSelectorRequirement', { 1: ['key', 's'], 2: ['operator', 's'], 3: ['values', 'ss'] }))],
});
const PRECONDITIONS = msg('Preconditions', { 1: ['uid', 's?'], 2: ['resourceVersion', 's?'] });
export const DELETE_OPTIONS = msg('DeleteOptions', {
  1: ['gracePeriodSeconds', 'i?'], 2: ['preconditions', PRECONDITIONS], 3: ['orphanDependents', 'b?'], 4: ['propagationPolicy', 's?'], 5: ['dryRun', 'ss'],
});

// --- core/v1: the pod template ------------------------------------------------------------

const LOCAL_REF = msg('LocalObjectReference', { 1: ['name', 's'] });
const FIELD_SELECTOR = msg('ObjectFieldSelector', { 1: ['apiVersion', 's'], 2: ['fieldPath', 's'] });
const RESOURCE_FIELD_SELECTOR = msg('ResourceFieldSelector', { 1: ['containerName', 's'], 2: ['resource', 's'], 3: ['divisor', 'q'] });
const KEY_SELECTOR = (name: string) => msg(name, { 1: ['', inline(LOCAL_REF)], 2: ['key', 's'], 3: ['optional', 'b?'] });
const ENV_VAR_SOURCE = msg('EnvVarSource', {
  1: ['fieldRef', FIELD_SELECTOR], 2: ['resourceFieldRef', RESOURCE_FIELD_SELECTOR], 3: ['configMapKeyRef', KEY_SELECTOR('ConfigMapKeySelector')], 4: ['secretKeyRef', KEY_SELECTOR('SecretKeySelector')],
});
const ENV_VAR = msg('EnvVar', { 1: ['name', 's'], 2: ['value', 's'], 3: ['valueFrom', ENV_VAR_SOURCE] });
const ENV_FROM = msg('EnvFromSource', {
  1: ['prefix', 's'],
  2: ['configMapRef', msg('ConfigMapEnvSource', { 1: ['', inline(LOCAL_REF)], 2: ['optional', 'b?'] })],
  3: ['secretRef', msg('SecretEnvSource', { 1: ['', inline(LOCAL_REF)], 2: ['optional', 'b?'] })],
});
const RESOURCES = msg('ResourceRequirements', {
  1: ['limits', 'qmap'], 2: ['requests', 'qmap'], 3: ['claims', list(msg('ResourceClaim', { 1: ['name', 's'], 2: ['request', 's?'] }))],
});
const VOLUME_MOUNT = msg('VolumeMount', {
  1: ['name', 's'], 2: ['readOnly', 'b'], 3: ['mountPath', 's'], 4: ['subPath', 's'], 5: ['mountPropagation', 's?'], 6: ['subPathExpr', 's'], 7: ['recursiveReadOnly', 's?'],
});
const CONTAINER_PORT = msg('ContainerPort', { 1: ['name', 's'], 2: ['hostPort', 'i'], 3: ['containerPort', 'i'], 4: ['protocol', 's'], 5: ['hostIP', 's'] });
const SE_LINUX = msg('SELinuxOptions', { 1: ['user', 's'], 2: ['role', 's'], 3: ['type', 's'], 4: ['level', 's'] });
const WINDOWS = msg('WindowsSecurityContextOptions', { 1: ['gmsaCredentialSpecName', 's?'], 2: ['gmsaCredentialSpec', 's?'], 3: ['runAsUserName', 's?'], 4: ['hostProcess', 'b?'] });
const SECCOMP = msg('SeccompProfile', { 1: ['type', 's'], 2: ['localhostProfile', 's?'] });
const APPARMOR = msg('AppArmorProfile', { 1: ['type', 's'], 2: ['localhostProfile', 's?'] });
const SECURITY_CONTEXT = msg('SecurityContext', {
  1: ['capabilities', msg('Capabilities', { 1: ['add', 'ss'], 2: ['drop', 'ss'] })], 2: ['privileged', 'b?'], 3: ['seLinuxOptions', SE_LINUX], 10: ['windowsOptions', WINDOWS],
  4: ['runAsUser', 'i?'], 8: ['runAsGroup', 'i?'], 5: ['runAsNonRoot', 'b?'], 6: ['readOnlyRootFilesystem', 'b?'], 7: ['allowPrivilegeEscalation', 'b?'],
  9: ['procMount', 's?'], 11: ['seccompProfile', SECCOMP], 12: ['appArmorProfile', APPARMOR],
});
const EXEC = msg('ExecAction', { 1: ['command', 'ss'] });
const HTTP_GET = msg('HTTPGetAction', {
  1: ['path', 's'], 2: ['port', 'ios'], 3: ['host', 's'], 4: ['scheme', 's'], 5: ['httpHeaders', list(msg('HTTPHeader', { 1: ['name', 's'], 2: ['value', 's'] }))],
});
const TCP_SOCKET = msg('TCPSocketAction', { 1: ['port', 'ios'], 2: ['host', 's'] });
const PROBE_HANDLER = msg('ProbeHandler', { 1: ['exec', EXEC], 2: ['httpGet', HTTP_GET], 3: ['tcpSocket', TCP_SOCKET], 4: ['grpc', msg('GRPCAction', { 1: ['port', 'i'], 2: ['service', 's?'] })] });
const PROBE = msg('Probe', {
  1: ['', inline(PROBE_HANDLER)], 2: ['initialDelaySeconds', 'i'], 3: ['timeoutSeconds', 'i'], 4: ['periodSeconds', 'i'], 5: ['successThreshold', 'i'], 6: ['failureThreshold', 'i'], 7: ['terminationGracePeriodSeconds', 'i?'],
});
const LIFECYCLE_HANDLER = msg('LifecycleHandler', { 1: ['exec', EXEC], 2: ['httpGet', HTTP_GET], 3: ['tcpSocket', TCP_SOCKET], 4: ['sleep', msg('SleepAction', { 1: ['seconds', 'i'] })] });
const LIFECYCLE = msg('Lifecycle', { 1: ['postStart', LIFECYCLE_HANDLER], 2: ['preStop', LIFECYCLE_HANDLER] });
const CONTAINER = msg('Container', {
  1: ['name', 's'], 2: ['image', 's'], 3: ['command', 'ss'], 4: ['args', 'ss'], 5: ['workingDir', 's'], 6: ['ports', list(CONTAINER_PORT)], 19: ['envFrom', list(ENV_FROM)],
  7: ['env', list(ENV_VAR)], 8: ['resources', RESOURCES], 23: ['resizePolicy', list(msg('ContainerResizePolicy', { 1: ['resourceName', 's'], 2: ['restartPolicy', 's'] }))],
  24: ['restartPolicy', 's?'], 9: ['volumeMounts', list(VOLUME_MOUNT)], 21: ['volumeDevices', list(msg('VolumeDevice', { 1: ['name', 's'], 2: ['devicePath', 's'] }))],
  10: ['livenessProbe', PROBE], 11: ['readinessProbe', PROBE], 22: ['startupProbe', PROBE], 12: ['lifecycle', LIFECYCLE], 13: ['terminationMessagePath', 's'],
  20: ['terminationMessagePolicy', 's'], 14: ['imagePullPolicy', 's'], 15: ['securityContext', SECURITY_CONTEXT], 16: ['stdin', 'b'], 17: ['stdinOnce', 'b'], 18: ['tty', 'b'],
});

const KEY_TO_PATH = msg('KeyToPath', { 1: ['key', 's'], 2: ['path', 's'], 3: ['mode', 'i?'] });
const DOWNWARD_FILE = msg('DownwardAPIVolumeFile', { 1: ['path', 's'], 2: ['fieldRef', FIELD_SELECTOR], 3: ['resourceFieldRef', RESOURCE_FIELD_SELECTOR], 4: ['mode', 'i?'] });
const VOLUME_PROJECTION = msg('VolumeProjection', {
  1: ['secret', msg('SecretProjection', { 1: ['', inline(LOCAL_REF)], 2: ['items', list(KEY_TO_PATH)], 4: ['optional', 'b?'] })],
  2: ['downwardAPI', msg('DownwardAPIProjection', { 1: ['items', list(DOWNWARD_FILE)] })],
  3: ['configMap', msg('ConfigMapProjection', { 1: ['', inline(LOCAL_REF)], 2: ['items', list(KEY_TO_PATH)], 4: ['optional', 'b?'] })],
  4: ['serviceAccountToken', msg('ServiceAccountTokenProjection', { 1: ['audience', 's'], 2: ['expirationSeconds', 'i?'], 3: ['path', 's'] })],
  5: ['clusterTrustBundle', msg('ClusterTrustBundleProjection', { 1: ['name', 's?'], 2: ['signerName', 's?'], 3: ['labelSelector', LABEL_SELECTOR], 5: ['optional', 'b?'], 4: ['path', 's'] })],
});
/** The volume sources a Job's pods use; any other (cloud disks, ephemeral, image…) is a 415. */
const VOLUME_SOURCE = msg('VolumeSource', {
  1: ['hostPath', msg('HostPathVolumeSource', { 1: ['path', 's'], 2: ['type', 's?'] })],
  2: ['emptyDir', msg('EmptyDirVolumeSource', { 1: ['medium', 's'], 2: ['sizeLimit', 'q'] })],
  6: ['secret', msg('SecretVolumeSource', { 1: ['secretName', 's'], 2: ['items', list(KEY_TO_PATH)], 3: ['defaultMode', 'i?'], 4: ['optional', 'b?'] })],
  7: ['nfs', msg('NFSVolumeSource', { 1: ['server', 's'], 2: ['path', 's'], 3: ['readOnly', 'b'] })],
  10: ['persistentVolumeClaim', msg('PersistentVolumeClaimVolumeSource', { 1: ['claimName', 's'], 2: ['readOnly', 'b'] })],
  16: ['downwardAPI', msg('DownwardAPIVolumeSource', { 1: ['items', list(DOWNWARD_FILE)], 2: ['defaultMode', 'i?'] })],
  19: ['configMap', msg('ConfigMapVolumeSource', { 1: ['', inline(LOCAL_REF)], 2: ['items', list(KEY_TO_PATH)], 3: ['defaultMode', 'i?'], 4: ['optional', 'b?'] })],
  26: ['projected', msg('ProjectedVolumeSource', { 1: ['sources', list(VOLUME_PROJECTION)], 2: ['defaultMode', 'i?'] })],
  28: ['csi', msg('CSIVolumeSource', { 1: ['driver', 's'], 2: ['readOnly', 'b?'], 3: ['fsType', 's?'], 4: ['volumeAttributes', 'map'], 5: ['nodePublishSecretRef', LOCAL_REF] })],
});
/** Volume{name=1, volumeSource=2}: JSON flattens the VolumeSource into the volume. */
const VOLUME = msg('Volume', { 1: ['name', 's'], 2: ['', inline(VOLUME_SOURCE)] });

const NODE_SELECTOR_REQUIREMENT = msg('NodeSelectorRequirement', { 1: ['key', 's'], 2: ['operator', 's'], 3: ['values', 'ss'] });
const NODE_SELECTOR_TERM = msg('NodeSelectorTerm', { 1: ['matchExpressions', list(NODE_SELECTOR_REQUIREMENT)], 2: ['matchFields', list(NODE_SELECTOR_REQUIREMENT)] });
const POD_AFFINITY_TERM = msg('PodAffinityTerm', {
  1: ['labelSelector', LABEL_SELECTOR], 2: ['namespaces', 'ss'], 3: ['topologyKey', 's'], 4: ['namespaceSelector', LABEL_SELECTOR], 5: ['matchLabelKeys', 'ss'], 6: ['mismatchLabelKeys', 'ss'],
});
const POD_AFFINITY = (name: string) => msg(name, {
  1: ['requiredDuringSchedulingIgnoredDuringExecution', list(POD_AFFINITY_TERM)],
  2: ['preferredDuringSchedulingIgnoredDuringExecution', list(msg('WeightedPodAffinityTerm', { 1: ['weight', 'i'], 2: ['podAffinityTerm', POD_AFFINITY_TERM] }))],
});
const AFFINITY = msg('Affinity', {
  1: ['nodeAffinity', msg('NodeAffinity', {
    1: ['requiredDuringSchedulingIgnoredDuringExecution', msg('NodeSelector', { 1: ['nodeSelectorTerms', list(NODE_SELECTOR_TERM)] })],
    2: ['preferredDuringSchedulingIgnoredDuringExecution', list(msg('PreferredSchedulingTerm', { 1: ['weight', 'i'], 2: ['preference', NODE_SELECTOR_TERM] }))],
  })],
  2: ['podAffinity', POD_AFFINITY('PodAffinity')],
  3: ['podAntiAffinity', POD_AFFINITY('PodAntiAffinity')],
});
const POD_SECURITY_CONTEXT = msg('PodSecurityContext', {
  1: ['seLinuxOptions', SE_LINUX], 8: ['windowsOptions', WINDOWS], 2: ['runAsUser', 'i?'], 6: ['runAsGroup', 'i?'], 3: ['runAsNonRoot', 'b?'], 4: ['supplementalGroups', 'is'],
  12: ['supplementalGroupsPolicy', 's?'], 5: ['fsGroup', 'i?'], 7: ['sysctls', list(msg('Sysctl', { 1: ['name', 's'], 2: ['value', 's'] }))], 9: ['fsGroupChangePolicy', 's?'],
  10: ['seccompProfile', SECCOMP], 11: ['appArmorProfile', APPARMOR], 13: ['seLinuxChangePolicy', 's?'],
});
const TOLERATION = msg('Toleration', { 1: ['key', 's'], 2: ['operator', 's'], 3: ['value', 's'], 4: ['effect', 's'], 5: ['tolerationSeconds', 'i?'] });
const TOPOLOGY_SPREAD = msg('TopologySpreadConstraint', {
  1: ['maxSkew', 'i'], 2: ['topologyKey', 's'], 3: ['whenUnsatisfiable', 's'], 4: ['labelSelector', LABEL_SELECTOR], 5: ['minDomains', 'i?'], 6: ['nodeAffinityPolicy', 's?'], 7: ['nodeTaintsPolicy', 's?'], 8: ['matchLabelKeys', 'ss'],
});
const POD_SPEC = msg('PodSpec', {
  1: ['volumes', list(VOLUME)], 20: ['initContainers', list(CONTAINER)], 2: ['containers', list(CONTAINER)], 3: ['restartPolicy', 's'], 4: ['terminationGracePeriodSeconds', 'i?'],
  5: ['activeDeadlineSeconds', 'i?'], 6: ['dnsPolicy', 's'], 7: ['nodeSelector', 'map'], 8: ['serviceAccountName', 's'], 9: ['serviceAccount', 's'], 21: ['automountServiceAccountToken', 'b?'],
  10: ['nodeName', 's'], 11: ['hostNetwork', 'b'], 12: ['hostPID', 'b'], 13: ['hostIPC', 'b'], 27: ['shareProcessNamespace', 'b?'], 14: ['securityContext', POD_SECURITY_CONTEXT],
  15: ['imagePullSecrets', list(LOCAL_REF)], 16: ['hostname', 's'], 17: ['subdomain', 's'], 18: ['affinity', AFFINITY], 19: ['schedulerName', 's'], 22: ['tolerations', list(TOLERATION)],
  23: ['hostAliases', list(msg('HostAlias', { 1: ['ip', 's'], 2: ['hostnames', 'ss'] }))], 24: ['priorityClassName', 's'], 25: ['priority', 'i?'],
  26: ['dnsConfig', msg('PodDNSConfig', { 1: ['nameservers', 'ss'], 2: ['searches', 'ss'], 3: ['options', list(msg('PodDNSConfigOption', { 1: ['name', 's'], 2: ['value', 's?'] }))] })],
  28: ['readinessGates', list(msg('PodReadinessGate', { 1: ['conditionType', 's'] }))], 29: ['runtimeClassName', 's?'], 30: ['enableServiceLinks', 'b?'], 31: ['preemptionPolicy', 's?'],
  32: ['overhead', 'qmap'], 33: ['topologySpreadConstraints', list(TOPOLOGY_SPREAD)], 35: ['setHostnameAsFQDN', 'b?'], 36: ['os', msg('PodOS', { 1: ['name', 's'] })], 37: ['hostUsers', 'b?'],
  38: ['schedulingGates', list(msg('PodSchedulingGate', { 1: ['name', 's'] }))],
  39: ['resourceClaims', list(msg('PodResourceClaim', { 1: ['name', 's'], 3: ['resourceClaimName', 's?'], 4: ['resourceClaimTemplateName', 's?'] }))], 40: ['resources', RESOURCES],
});
const POD_TEMPLATE_SPEC = msg('PodTemplateSpec', { 1: ['metadata', OBJECT_META], 2: ['spec', POD_SPEC] });

// --- batch/v1 -----------------------------------------------------------------------------

const POD_FAILURE_POLICY = msg('PodFailurePolicy', {
  1: ['rules', list(msg('PodFailurePolicyRule', {
    1: ['action', 's'],
    2: ['onExitCodes', msg('PodFailurePolicyOnExitCodesRequirement', { 1: ['containerName', 's?'], 2: ['operator', 's'], 3: ['values', 'is'] })],
    3: ['onPodConditions', list(msg('PodFailurePolicyOnPodConditionsPattern', { 1: ['type', 's'], 2: ['status', 's'] }))],
  }))],
});
const SUCCESS_POLICY = msg('SuccessPolicy', { 1: ['rules', list(msg('SuccessPolicyRule', { 1: ['succeededIndexes', 's?'], 2: ['succeededCount', 'i?'] }))] });
const JOB_SPEC = msg('JobSpec', {
  1: ['parallelism', 'i?'], 2: ['completions', 'i?'], 3: ['activeDeadlineSeconds', 'i?'], 11: ['podFailurePolicy', POD_FAILURE_POLICY], 16: ['successPolicy', SUCCESS_POLICY],
  7: ['backoffLimit', 'i?'], 12: ['backoffLimitPerIndex', 'i?'], 13: ['maxFailedIndexes', 'i?'], 4: ['selector', LABEL_SELECTOR], 5: ['manualSelector', 'b?'],
  6: ['template', POD_TEMPLATE_SPEC], 8: ['ttlSecondsAfterFinished', 'i?'], 9: ['completionMode', 's?'], 10: ['suspend', 'b?'], 14: ['podReplacementPolicy', 's?'], 15: ['managedBy', 's?'],
});
const JOB_CONDITION = msg('JobCondition', { 1: ['type', 's'], 2: ['status', 's'], 3: ['lastProbeTime', 'time'], 4: ['lastTransitionTime', 'time'], 5: ['reason', 's'], 6: ['message', 's'] });
const JOB_STATUS = msg('JobStatus', {
  1: ['conditions', list(JOB_CONDITION)], 2: ['startTime', 'time'], 3: ['completionTime', 'time'], 4: ['active', 'i'], 5: ['succeeded', 'i'], 6: ['failed', 'i'], 11: ['terminating', 'i?'],
  7: ['completedIndexes', 's'], 10: ['failedIndexes', 's?'], 8: ['uncountedTerminatedPods', msg('UncountedTerminatedPods', { 1: ['succeeded', 'ss'], 2: ['failed', 'ss'] })], 9: ['ready', 'i?'],
});

const OBJECT_REFERENCE = msg('ObjectReference', {
  1: ['kind', 's'], 2: ['namespace', 's'], 3: ['name', 's'], 4: ['uid', 's'], 5: ['apiVersion', 's'], 6: ['resourceVersion', 's'], 7: ['fieldPath', 's'],
});
const CRON_JOB_SPEC = msg('CronJobSpec', {
  1: ['schedule', 's'], 8: ['timeZone', 's?'], 2: ['startingDeadlineSeconds', 'i?'], 3: ['concurrencyPolicy', 's'], 4: ['suspend', 'b?'],
  5: ['jobTemplate', msg('JobTemplateSpec', { 1: ['metadata', OBJECT_META], 2: ['spec', JOB_SPEC] })], 6: ['successfulJobsHistoryLimit', 'i?'], 7: ['failedJobsHistoryLimit', 'i?'],
});
const CRON_JOB_STATUS = msg('CronJobStatus', { 1: ['active', list(OBJECT_REFERENCE)], 4: ['lastScheduleTime', 'time'], 5: ['lastSuccessfulTime', 'time'] });

/** The kinds kubectl's typed clients send bodies of, as runtime.Unknown's TypeMeta names them. */
export const KINDS: Record<string, Msg> = {
  Namespace: msg('Namespace', {
    1: ['metadata', OBJECT_META],
    2: ['spec', msg('NamespaceSpec', { 1: ['finalizers', 'ss'] })],
    3: ['status', msg('NamespaceStatus', {
      1: ['phase', 's'],
      2: ['conditions', list(msg('NamespaceCondition', { 1: ['type', 's'], 2: ['status', 's'], 4: ['lastTransitionTime', 'time'], 5: ['reason', 's'], 6: ['message', 's'] }))],
    })],
  }),
  // policy/v1 Eviction (drain).
  Eviction: msg('Eviction', { 1: ['metadata', OBJECT_META], 2: ['deleteOptions', DELETE_OPTIONS] }),
  DeleteOptions: DELETE_OPTIONS,
  // `kubectl create configmap` and `create secret` (the setup deploy/audit-cronjob.yaml describes).
  ConfigMap: msg('ConfigMap', { 1: ['metadata', OBJECT_META], 4: ['immutable', 'b?'], 2: ['data', 'map'], 3: ['binaryData', 'bmap'] }),
  Secret: msg('Secret', { 1: ['metadata', OBJECT_META], 5: ['immutable', 'b?'], 2: ['data', 'bmap'], 4: ['stringData', 'map'], 3: ['type', 's'] }),
  // authentication/v1 TokenRequest (`kubectl create token`).
  TokenRequest: msg('TokenRequest', {
    1: ['metadata', OBJECT_META],
    2: ['spec', msg('TokenRequestSpec', {
      1: ['audiences', 'ss'], 4: ['expirationSeconds', 'i?'],
      3: ['boundObjectRef', msg('BoundObjectReference', { 1: ['kind', 's'], 2: ['apiVersion', 's'], 3: ['name', 's'], 4: ['uid', 's'] })],
    })],
    3: ['status', msg('TokenRequestStatus', { 1: ['token', 's'], 2: ['expirationTimestamp', 'time'] })],
  }),
  // batch/v1 Job (`kubectl create job`, `--from=cronjob/NAME`).
  Job: msg('Job', { 1: ['metadata', OBJECT_META], 2: ['spec', JOB_SPEC], 3: ['status', JOB_STATUS] }),
  // batch/v1 CronJob (`kubectl create cronjob`).
  CronJob: msg('CronJob', { 1: ['metadata', OBJECT_META], 2: ['spec', CRON_JOB_SPEC], 3: ['status', CRON_JOB_STATUS] }),
};

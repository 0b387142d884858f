/**
 * The kubelet stand-in's pure parts, against what the real kubelet (1.32) does: CRI log
 * lines as `kubectl logs` shows them, `$(VAR)` expansion, the `kubernetes` Service's
 * variables, quantities, and the downward API's fields. (Its CRI and volume work is
 * driven by the sandbox tests: deploy, api-scenarios.)
 */
import { describe, expect, it } from 'vitest';
import { expand, serviceEnv } from './kubelet-api.js';
import { criLogText } from './kubelet-logs.js';
import { quantity } from './api/volume-binder.js';
import { fieldValue } from './kubelet-volumes.js';

describe('the kubelet stand-in', () => {
  it('gives CRI log lines back as the container wrote them: partial lines joined, timestamps and tail on request', () => {
    const file = [
      '2026-11-26T03:49:39.1Z stdout F serving the metrics',
      '2026-11-26T03:49:40.2Z stderr P audited 1 ',
      '2026-11-26T03:49:40.3Z stderr F host(s)',
      '2026-11-26T03:49:41.4Z stdout F ',
      'not a CRI line',
      '',
    ].join('\n');
    expect(criLogText(file)).toBe('serving the metrics\naudited 1 host(s)\n\n');
    expect(criLogText(file, { timestamps: true })).toBe('2026-11-26T03:49:39.1Z serving the metrics\n2026-11-26T03:49:40.3Z audited 1 host(s)\n2026-11-26T03:49:41.4Z \n');
    expect(criLogText(file, { tailLines: 1 })).toBe('\n');
    expect(criLogText(file, { tailLines: 0 })).toBe('');
  });

  it('expands $(VAR) from the variables defined before, keeps an unknown one, and reads $$ as $', () => {
    const vars = new Map([['NODE_NAME', 'node2'], ['SHARDS', '3']]);
    expect(expand('$(NODE_NAME)-x', vars)).toBe('node2-x');
    expect(expand('$(MISSING) $$(NODE_NAME) $SHARDS', vars)).toBe('$(MISSING) $(NODE_NAME) $SHARDS');
  });

  it("names the API server in the `kubernetes` Service's variables", () => {
    const env = Object.fromEntries(serviceEnv(new URL('https://198.18.0.1:6443')).map((e) => [e.name, e.value]));
    expect(env).toEqual({
      KUBERNETES_SERVICE_HOST: '198.18.0.1', KUBERNETES_SERVICE_PORT: '6443', KUBERNETES_SERVICE_PORT_HTTPS: '6443', KUBERNETES_PORT: 'tcp://198.18.0.1:6443',
      KUBERNETES_PORT_6443_TCP: 'tcp://198.18.0.1:6443', KUBERNETES_PORT_6443_TCP_PROTO: 'tcp', KUBERNETES_PORT_6443_TCP_PORT: '6443', KUBERNETES_PORT_6443_TCP_ADDR: '198.18.0.1',
    });
  });

  it("reads an emptyDir's sizeLimit in bytes, binary and decimal suffixes alike", () => {
    expect(quantity('1Mi')).toBe(1048576);
    expect(quantity('64M')).toBe(64_000_000);
    expect(quantity('512')).toBe(512);
    expect(quantity('1.5Gi')).toBe(1610612736);
    expect(quantity('lots')).toBeNaN();
  });

  it("resolves the downward API's fields, a label or annotation by its key, and refuses one it does not know", () => {
    const pod = {
      metadata: { name: 'audit-1-0-x2k9z', namespace: 'decom', uid: 'u1', labels: { 'batch.kubernetes.io/job-name': 'audit-1' }, annotations: { 'batch.kubernetes.io/job-completion-index': '0' } },
      spec: { nodeName: 'node2', serviceAccountName: 'decom-audit' },
    };
    expect(fieldValue(pod, "metadata.labels['batch.kubernetes.io/job-name']", '198.18.0.12')).toBe('audit-1');
    expect(fieldValue(pod, "metadata.annotations['batch.kubernetes.io/job-completion-index']", '198.18.0.12')).toBe('0');
    expect(fieldValue(pod, 'spec.nodeName', '198.18.0.12')).toBe('node2');
    expect(fieldValue(pod, 'status.hostIP', '198.18.0.12')).toBe('198.18.0.12');
    expect(fieldValue(pod, "metadata.labels['missing']", '198.18.0.12')).toBe('');
    expect(() => fieldValue(pod, 'spec.nodeSelector', '198.18.0.12')).toThrow(/unsupported fieldRef spec.nodeSelector/);
  });
});

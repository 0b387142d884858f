// What each step's re-probe reads (probes/script.ts probeBody, engine.ts viewsOf): only what
// its step can have changed. The process listing only for the views that ask which daemons
// run, containerd's command line and config only for the runtime's own views, the trust
// step's the trust store alone and static-pods' the manifests alone, each read into the state
// with the rest of the files kept.
import { describe, expect, it } from 'vitest';
import { ALL_VIEWS, emptyState, NARROWER, PURGE_VIEWS, reprobedViews, stateFromSections, type View } from './index.js';
import { probeScript } from './script.js';
import { loadPlaybook } from '../playbook/index.js';
import { STEPS } from '../steps/index.js';

/** The views a step's round trip re-probes within a --purge reset's full probe (the engine's rule). */
const reprobe = (step: string): Set<View> => reprobedViews(STEPS[step]!.views.filter((v) => PURGE_VIEWS.has(v) || PURGE_VIEWS.has(NARROWER[v] as View)));

const LISTING = "ST=$(grep -a -H '' /proc/[0-9]*/stat)";
const CONTAINERD = 's containerd-config';

describe("a reset step's re-probe", () => {
  it('reads the process listing and containerd config only where its views ask; the full probe reads both', async () => {
    const reads: Record<string, string> = {};
    for (const s of (await loadPlaybook('reset', STEPS)).steps) {
      const script = probeScript('n', reprobe(s.label));
      reads[s.label] = `${script.includes(LISTING) ? 'processes' : '-'} ${script.includes(CONTAINERD) ? 'containerd' : '-'}`;
    }
    expect(reads).toEqual({
      backup: '- -', 'static-pods': 'processes containerd', kubelet: 'processes -', containers: 'processes containerd', trust: '- -',
      processes: 'processes -', cgroups: 'processes -', etcd: 'processes -', ports: '- -', mounts: '- -', links: '- -',
      routes: '- -', netns: '- -', firewall: '- -', dns: '- -', files: '- -', installed: 'processes containerd', images: 'processes containerd',
      verify: 'processes containerd',
    });
    // The verify step asks for every view: the narrower ones are not read again beside their wider ones.
    const verify = probeScript('n', reprobe('verify'));
    expect([verify.match(/^s cni-nat$/m), verify.match(/^s anchors$/gm)?.length]).toEqual([null, 1]);
    const full = probeScript('n', ALL_VIEWS);
    expect([full.includes(LISTING), full.includes(CONTAINERD)]).toEqual([true, true]);
  });

  it("static-pods' reads, of the files, the manifests alone, and keeps the other paths", () => {
    const script = probeScript('n', reprobe('static-pods'));
    expect(script).toMatch(/^s manifest-paths$/m);
    expect(script).not.toMatch(/^s (paths|cluster-cas|kubeconfigs|resolved|sysctl|etcd-archives)$/m);
    const before = { ...emptyState(), paths: [{ kind: 'kubelet-state' as const, path: '/var/lib/kubelet/pki' }, { kind: 'static-pod-manifest' as const, path: '/etc/kubernetes/manifests/etcd.yaml' }] };
    const after = stateFromSections(new Map([['meta', 'hostname=n\n'], ['manifest-paths', '']]), before as never);
    expect(after.paths).toEqual([before.paths[0]]);
  });

  it("trust's reads the trust store alone, once even beside the files view, and keeps the rest of the files", () => {
    const trust = probeScript('n', reprobe('trust'));
    expect(trust.match(/^s (cluster-cas|anchors|bundle)$/gm)).toEqual(['s cluster-cas', 's anchors', 's bundle']);
    expect(trust).not.toMatch(/^s (paths|kubeconfigs|resolved|sysctl|etcd-archives)$/m);
    expect(probeScript('n', new Set<View>(['files', 'trust-store'])).match(/^s anchors$/gm)).toHaveLength(1);
    const before = { ...emptyState(), paths: [{ kind: 'kubelet-state' as const, path: '/var/lib/kubelet/pki' }], anchors: [{ path: '/usr/local/share/ca-certificates/k8s.crt', text: 'x' }] };
    const after = stateFromSections(new Map([['meta', 'hostname=n\n'], ['cluster-cas', ''], ['anchors', ''], ['bundle', '']]), before as never);
    expect([after.paths, after.anchors, after.bundleTrusts]).toEqual([before.paths, [], []]);
  });
});

// `parallel:` groups (playbook/parallel.ts, checked by the loader): the shipped playbooks'
// groups hold against the built-in steps; a group that is not adjacent, holds a shell,
// cluster or whole-node step, or steps that see each other's views, change the same
// paths or are ordered by the design, is refused at its `parallel:` with FILE:LINE:COL.
// Plain unit tests: text parsed in memory. No sandbox.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadPlaybook, parsePlaybook, type StepCatalogue } from './index.js';
import { conflict } from './parallel.js';
import { STEPS } from '../steps/index.js';
import { UserError } from '../util/errors.js';

const F = '/etc/decom/pb.yaml';
const HEAD = 'apiVersion: decom/v1\nkind: Playbook\nsteps:\n';
const parse = (steps: string, catalogue: StepCatalogue = STEPS) => parsePlaybook(F, `${HEAD}${steps}`, catalogue);

function errorOf(steps: string, catalogue?: StepCatalogue): string {
  try {
    parse(steps, catalogue);
  } catch (e) {
    expect(e).toBeInstanceOf(UserError);
    expect((e as UserError).exitCode).toBe(2);
    return (e as UserError).message;
  }
  throw new Error('expected an error');
}

describe('parallel: groups', () => {
  it('the shipped playbooks group independent steps, adjacent, each step with its group', async () => {
    for (const name of ['reset', 'decommission']) {
      const pb = await loadPlaybook(name, STEPS);
      const groups = new Map<string, string[]>();
      for (const s of pb.steps) if (s.parallel) groups.set(s.parallel, [...(groups.get(s.parallel) ?? []), s.label]);
      expect(Object.fromEntries(groups), name).toEqual({
        'runtime-and-trust': ['containers', 'trust'],
        'mounts-and-links': ['mounts', 'links'],
        network: ['routes', 'netns', 'firewall', 'dns'],
      });
      // trust still before files, dns after containers: the design's order holds across the groups.
      const at = (n: string) => pb.steps.findIndex((s) => s.label === n);
      expect(at('trust')).toBeLessThan(at('files'));
      expect(at('dns')).toBeGreaterThan(at('containers'));
      expect(at('links')).toBeLessThan(at('netns'));
    }
  });

  it('takes a group of two independent built-in steps, and keeps the group on each', () => {
    const pb = parse('  - {step: firewall, parallel: net}\n  - {step: dns, parallel: net}\n  - files\n');
    expect(pb.steps.map((s) => [s.label, s.parallel])).toEqual([['firewall', 'net'], ['dns', 'net'], ['files', undefined]]);
  });

  it('refuses steps that see each other: the same view, and a view and its narrower one', () => {
    expect(errorOf('  - {step: mounts, parallel: g}\n  - {step: netns, parallel: g}\n')).toBe(
      `${F}:5:29: steps[1].parallel: netns cannot run side by side with mounts (steps[0]): both look at the node's mounts (each step's re-probe would see the other's work)`,
    );
    const spec = (views: string[]) => ({ description: 'd', params: z.object({}), views, paths: [] });
    const cat: StepCatalogue = { cni: spec(['cni-firewall']), all: spec(['firewall']), pods: spec(['containers']), ps: spec(['processes']) };
    expect(errorOf('  - {step: cni, parallel: g}\n  - {step: all, parallel: g}\n', cat)).toMatch(/all cannot run side by side with cni \(steps\[0\]\): both look at the node's cni-firewall/);
    // The containers' re-probe takes the process list too.
    expect(errorOf('  - {step: pods, parallel: g}\n  - {step: ps, parallel: g}\n', cat)).toMatch(/both look at the node's processes/);
  });

  it("refuses steps the design orders, whichever is written first", () => {
    expect(errorOf('  - {step: dns, parallel: g}\n  - {step: containers, parallel: g}\n')).toMatch(/:5:34: steps\[1\]\.parallel: containers cannot run side by side with dns \(steps\[0\]\): dns must come after containers \(the order of a reset\)$/);
    expect(errorOf('  - {step: netns, parallel: g}\n  - {step: links, parallel: g}\n')).toMatch(/links cannot run side by side with netns \(steps\[0\]\): netns must come after links/);
  });

  it('refuses a shell step, a cluster step, the verify step and a step that does not say what it changes, each with why', () => {
    expect(errorOf('  - {step: dns, parallel: g}\n  - {name: mine, shell: "true", parallel: g}\n')).toMatch(/steps\[1\]\.parallel: a shell step cannot run side by side with another: decom cannot tell what its command touches$/);
    expect(errorOf('  - {step: drain, parallel: g}\n  - {step: dns, parallel: g}\n')).toMatch(/:4:29: steps\[0\]\.parallel: drain works on the cluster through its API, one step at a time$/);
    expect(errorOf('  - {step: dns, parallel: g}\n  - {step: verify, parallel: g}\n')).toMatch(/verify probes the whole node again/);
    expect(errorOf('  - {step: backup, parallel: g}\n  - {step: dns, parallel: g}\n')).toMatch(/backup does not say which paths it changes, so decom cannot tell that it is independent$/);
  });

  it('refuses a group split by another step, and a group of one', () => {
    expect(errorOf('  - {step: dns, parallel: g}\n  - files\n  - {step: firewall, parallel: g}\n')).toBe(
      `${F}:6:32: steps[2].parallel: group "g" must be adjacent steps: steps[0] is in it, steps[1] is not`,
    );
    expect(errorOf('  - dns\n  - {step: firewall, parallel: alone}\n')).toBe(
      `${F}:5:32: steps[1].parallel: group "alone" has this step alone; give the same group to the adjacent steps that run with it`,
    );
    expect(errorOf('  - {step: dns, parallel: ""}\n')).toMatch(/steps\[0\]\.parallel: expected a group name, not an empty string/);
  });

  it('refuses two steps whose paths nest, though their views do not meet', () => {
    const spec = (views: string[], paths: string[]) => ({ description: 'd', params: z.object({}), views, paths });
    const cat: StepCatalogue = { a: spec(['dns'], ['/etc/ssl']), b: spec(['firewall'], ['/etc/ssl/certs/java']), c: spec(['links'], ['/etc/sslx']) };
    expect(errorOf('  - {step: a, parallel: g}\n  - {step: b, parallel: g}\n', cat)).toMatch(/b cannot run side by side with a \(steps\[0\]\): both change files below \/etc\/ssl$/);
    // A sibling whose name only starts the same is not below it.
    expect(conflict({ name: 'a', spec: cat.a! }, { name: 'c', spec: cat.c! })).toBeUndefined();
  });
});

// The shipped playbooks (playbooks/): playbook.schema.json is up to date with the built-in
// steps (`npm run schema`), and the reset playbook loads in the order of a reset.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STEPS } from '../steps/index.js';
import { loadPlaybook, playbookJsonSchema } from './index.js';

describe('shipped playbooks', () => {
  it('ship a JSON Schema that is up to date with the built-in steps (npm run schema)', () => {
    const shipped = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'playbooks', 'playbook.schema.json'), 'utf8'));
    expect(shipped).toEqual(JSON.parse(JSON.stringify(playbookJsonSchema(STEPS))));
    for (const name of Object.keys(STEPS)) expect(JSON.stringify(shipped)).toContain(`"${name}"`);
  });

  it('reset is in the order of a reset (docs/design.md#the-order-of-a-reset) and loads against the catalogue', async () => {
    const p = await loadPlaybook('reset', STEPS);
    expect(p.steps.map((s) => s.label)).toEqual(['backup', 'static-pods', 'kubelet', 'containers', 'trust', 'processes', 'cgroups', 'etcd', 'ports', 'mounts', 'links', 'routes', 'netns', 'firewall', 'dns', 'files', 'installed', 'images', 'verify']);
  });
});

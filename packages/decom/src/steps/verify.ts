/** The last step of every reset: probe everything again; the run succeeds only if nothing is left. */
import { z } from 'zod';
import type { Step } from '../engine/step.js';
import { VIEWS } from '../probes/index.js';

export const verify: Step = {
  name: 'verify',
  description: 'probe everything again with the rules of `decom verify`: the host is clean only if nothing is left',
  params: z.object({}),
  owns: (f) => f.kind !== 'node-object', // the Node object is the cluster side's (decommission)
  views: VIEWS,
  plan: () => [],
  after: (s) => s,
  reprobe: true,
};

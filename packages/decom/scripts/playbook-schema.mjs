// Writes playbooks/playbook.schema.json (for editors) from the built-in steps' schemas.
// Run after `npm run build`; src/playbook/playbook-schema.test.ts fails when it is out of date.
import { writeFileSync } from 'node:fs';
import { STEPS } from '../dist/steps/index.js';
import { playbookJsonSchema } from '../dist/playbook/index.js';

writeFileSync(new URL('../playbooks/playbook.schema.json', import.meta.url), `${JSON.stringify(playbookJsonSchema(STEPS), null, 2)}\n`);

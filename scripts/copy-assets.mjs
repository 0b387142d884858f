// Shell assets run inside sandbox nodes; tsc does not copy them, so the build does.
import { cpSync, readdirSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const copy = (from, to) => {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.isDirectory()) copy(join(from, entry.name), join(to, entry.name));
    else if (entry.name.endsWith('.sh')) cpSync(join(from, entry.name), join(to, entry.name));
  }
};
copy('src', 'dist');

// Assets tsc does not copy: shell scripts run inside sandbox nodes, the CRI's .proto
// (read at run time by src/cri/client.ts).
import { cpSync, readdirSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const copy = (from, to) => {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.isDirectory()) copy(join(from, entry.name), join(to, entry.name));
    else if (/\.(sh|proto)$/.test(entry.name)) cpSync(join(from, entry.name), join(to, entry.name));
  }
};
copy('src', 'dist');

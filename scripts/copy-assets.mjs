// Assets tsc does not copy, from a package's src to its dist: shell scripts run inside
// sandbox nodes, the CRI's .proto (read at run time by the CRI client).
//   node ../../scripts/copy-assets.mjs src dist     (from a package's folder)
import { cpSync, readdirSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const [from = 'src', to = 'dist'] = process.argv.slice(2);
const copy = (src, dst) => {
  mkdirSync(dst, { recursive: true });
  for (const entry of readdirSync(src, { withFileTypes: true })) {
    if (entry.isDirectory()) copy(join(src, entry.name), join(dst, entry.name));
    else if (/\.(sh|proto)$/.test(entry.name)) cpSync(join(src, entry.name), join(dst, entry.name));
  }
};
copy(from, to);

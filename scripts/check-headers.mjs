// Every tracked source file opens with a comment saying what it is for: lists the files
// whose first line (after a shebang) is not a comment, and exits 1 if there are any.
//   node scripts/check-headers.mjs [ROOT]   (ROOT: a git checkout, by default this one; no dependencies)
// The files checked: *.ts (tests included), *.js, *.mjs, *.cjs (not in dist/ or
// node_modules/), *.sh, *.yaml, *.yml, Dockerfiles, and the extensionless executables
// in scripts/, packages/*/scripts/ and .ci/. JSON cannot hold comments: never checked.
// Test fixtures are inputs recorded from real components or written to match them
// (their folder's README says which): a comment would change what is tested.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The checkout this script belongs to. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

const SLASH = ['//', '/*'];
const HASH = ['#'];

/** The comment openers of a tracked file's kind, or undefined when the file is not checked. */
export function commentOpeners(path, mode) {
  if (path.split('/').some((part) => part === 'dist' || part === 'node_modules' || part === 'fixtures')) return undefined;
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (/\.(ts|mts|cts|js|mjs|cjs)$/.test(name)) return SLASH;
  if (/\.(sh|ya?ml)$/.test(name)) return HASH;
  if (name === 'Dockerfile' || name.startsWith('Dockerfile.') || name.endsWith('.Dockerfile')) return HASH;
  const scriptDir = /^(scripts|packages\/[^/]+\/scripts|\.ci)\/[^/]+$/.test(path);
  if (scriptDir && !name.includes('.') && mode === '100755') return HASH;
  return undefined;
}

/** Whether a file's text opens with a comment: its first line, after a shebang, starts with one of `openers`. */
export function opensWithComment(text, openers) {
  const lines = text.replace(/^\uFEFF/, '').split('\n');
  const first = (lines[0].startsWith('#!') ? lines[1] ?? '' : lines[0]).trimStart();
  return openers.some((o) => first.startsWith(o));
}

/** The checked files of `root`'s git index that do not open with a comment, in `git ls-files` order. */
export function filesWithoutHeader(root = ROOT) {
  const out = execFileSync('git', ['ls-files', '-s', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 });
  const missing = [];
  for (const entry of out.split('\0')) {
    if (!entry) continue;
    // "MODE OBJECT STAGE\tPATH"
    const tab = entry.indexOf('\t');
    const [mode, , stage] = entry.slice(0, tab).split(' ');
    const path = entry.slice(tab + 1);
    if (stage !== '0' && stage !== '2') continue; // a conflicted file: checked once
    const openers = commentOpeners(path, mode);
    if (!openers) continue;
    const file = join(root, path);
    if (!existsSync(file)) continue; // deleted in the working tree, not yet in the index
    if (!opensWithComment(readFileSync(file, 'utf8'), openers)) missing.push(path);
  }
  return missing;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const missing = filesWithoutHeader(process.argv[2] ?? ROOT);
  for (const path of missing) process.stdout.write(`${path}\n`);
  if (missing.length) process.stderr.write(`check-headers: ${missing.length} file(s) without a first comment saying what they are for\n`);
  process.exitCode = missing.length ? 1 : 0;
}

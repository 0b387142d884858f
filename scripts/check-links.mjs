// The link checker `npm run check:links` runs: every internal link and #anchor of the
// documentation (README.md, packages/decom/README.md, docs/**/*.md), and every citation
// of a documentation page in the sources (a docs/ path, with or without an #anchor,
// in a comment or a string of a .ts, .js, .mjs, .cjs, .sh or .yaml file, or of a script),
// checked by remark-validate-links the way remark-cli checks files: across files, so a
// link to a heading of another page is checked too. Never the network: external URLs
// are not fetched, and no hosted repository is looked for.
//   node scripts/check-links.mjs [ROOT]   (ROOT: the tree to check, default this checkout;
//                                          a copy outside git is walked instead of listed)
//   node scripts/check-links.mjs --package DIR   (DIR: the npm package decom, unpacked)
// The package's README links into the docs/ the package carries, a copy of the repository's
// docs/ (scripts/package-docs.mjs): in a checkout it is checked from the repository root,
// where those links land on the pages copied. With --package, DIR's README.md and docs/
// are checked where they are, and the citations of its dist/ too (what --help and the
// errors name must be in the package).
// Prints each broken link as FILE:LINE:COLUMN: REASON (for a citation, the source file and
// line) and exits 1 if there is any.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { remark } from 'remark';
import remarkValidateLinks from 'remark-validate-links';
import { engine } from 'unified-engine';

/** The checkout this script belongs to. */
const CHECKOUT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The documentation checked, as paths relative to the root (docs/ walked for *.md). */
const PAGES = ['README.md'];
/** The npm package's README, in a checkout: its links are the package's, checked from the root. */
const PACKAGE_README = 'packages/decom/README.md';

/** Where a source cites a page: a root-relative docs/ path ending in .md, with its #anchor if any. */
const CITATION = /(?<![\w./-])docs\/[\w./-]*\.md(?:#[\w-]*)?/g;

/** The sources whose citations are checked: by extension, or a script without one. */
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs|sh|ya?ml)$/;
const SCRIPT_DIR = /^(scripts|\.ci|packages\/[^/]+\/scripts)\/[^/.]+$/;
const SKIPPED_DIR = new Set(['node_modules', 'dist', '.git']);
/** In an unpacked package, dist/ is the product: its citations are checked. */
const SKIPPED_IN_PACKAGE = new Set(['node_modules']);

const posix = (p) => p.split(sep).join('/');

/** Every file below `dir` (relative to `root`), except in the skipped dirs (node_modules, dist and .git). */
function walk(root, dir = '', skipped = SKIPPED_DIR) {
  const out = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    if (entry.isDirectory() && skipped.has(entry.name)) continue;
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...walk(root, path, skipped));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** The root's files: git's (tracked, and new ones it does not ignore) when the root is a checkout's top, else a walk. */
function filesOf(root) {
  let top;
  try {
    top = execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    top = undefined;
  }
  if (top === undefined || realpathSync(top) !== realpathSync(root)) return walk(root);
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 });
  return [...new Set(listed.split('\0').filter(Boolean))].filter((p) => !p.split('/').some((part) => SKIPPED_DIR.has(part)) && existsSync(join(root, p)));
}

/** The citations in the root's sources: where each is (file, line, column) and what it names. */
export function citations(root, files = filesOf(root)) {
  const found = [];
  for (const file of files.filter((p) => SOURCE.test(p) || SCRIPT_DIR.test(p)).sort()) {
    const path = join(root, file);
    if (!statSync(path).isFile()) continue;
    const text = readFileSync(path, 'utf8');
    if (text.includes('\0')) continue;
    text.split('\n').forEach((line, i) => {
      for (const m of line.matchAll(CITATION)) found.push({ file, line: i + 1, column: m.index + 1, target: m[0] });
    });
  }
  return found;
}

/** The documentation pages of the root that exist, relative to it. */
function pages(root) {
  const docs = existsSync(join(root, 'docs')) ? walk(root, 'docs').filter((p) => p.endsWith('.md')) : [];
  return [...PAGES.map(posix), ...docs.sort()].filter((p) => existsSync(join(root, p)));
}

/** remark-validate-links over `files` (relative to root), together: the messages of each file. */
function validate(root, files) {
  return new Promise((done, fail) => {
    engine(
      {
        processor: remark,
        cwd: root,
        files,
        extensions: ['md'],
        plugins: [[remarkValidateLinks, { repository: false, root }]],
        detectConfig: false,
        detectIgnore: false,
        out: false,
        output: false,
        quiet: true,
        // The messages are read below, and printed with the citations' own places.
        reporter: () => '',
      },
      (error, _code, context) => (error ? fail(error) : done(context?.files ?? [])),
    );
  });
}

/**
 * Checks the root's documentation and its sources' citations. Returns the broken links,
 * each as "FILE:LINE:COLUMN: REASON" with the file relative to the root. `asPackage`: the
 * root is the npm package unpacked (its dist/ cited from too), not a checkout.
 */
export async function checkLinks(root = CHECKOUT, { asPackage = false } = {}) {
  root = resolve(root);
  const cited = citations(root, asPackage ? walk(root, '', SKIPPED_IN_PACKAGE) : filesOf(root));
  // The citations as links of a page at the root, so their paths resolve as they read: one per line.
  const suffix = `${process.pid}-${randomBytes(4).toString('hex')}.md`;
  const temp = `.check-links-citations-${suffix}`;
  const lines = cited.map((c) => `- [${c.file}:${c.line}](${c.target})`);
  writeFileSync(join(root, temp), `${lines.join('\n\n')}\n`);
  // The package's README at the root, where its docs/ links land on the pages the package copies.
  const packageReadme = !asPackage && existsSync(join(root, PACKAGE_README)) ? `.check-links-package-readme-${suffix}` : undefined;
  if (packageReadme) writeFileSync(join(root, packageReadme), readFileSync(join(root, PACKAGE_README), 'utf8'));
  const remove = () => {
    rmSync(join(root, temp), { force: true });
    if (packageReadme) rmSync(join(root, packageReadme), { force: true });
  };
  // Interrupted: the page goes, and the process ends as the signal would have ended it.
  const interrupted = (signal) => {
    remove();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
  try {
    const files = await validate(root, [...pages(root), temp, ...(packageReadme ? [packageReadme] : [])]);
    const broken = [];
    for (const file of files) {
      const path = posix(relative(root, resolve(root, file.path)));
      for (const m of file.messages) {
        if (path === temp) {
          // Line 2k+1 of the page is citation k.
          const c = cited[((m.line ?? 1) - 1) / 2];
          broken.push(c ? `${c.file}:${c.line}:${c.column}: ${m.reason} (cited as ${c.target})` : `${temp}:${m.line}: ${m.reason}`);
        } else {
          broken.push(`${path === packageReadme ? PACKAGE_README : path}:${m.line ?? 1}:${m.column ?? 1}: ${m.reason}`);
        }
      }
    }
    return { broken, pages: files.length - 1, citations: cited.length };
  } finally {
    remove();
    process.off('SIGINT', interrupted).off('SIGTERM', interrupted);
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const asPackage = args[0] === '--package';
  if (asPackage && args.length !== 2) {
    process.stderr.write('check-links: --package DIR: the unpacked package to check\n');
    process.exit(2);
  }
  const root = (asPackage ? args[1] : args[0]) ?? CHECKOUT;
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    process.stderr.write(`check-links: ${root}: not a directory\n`);
    process.exit(2);
  }
  const { broken, pages: n, citations: c } = await checkLinks(root, { asPackage });
  for (const line of broken) process.stdout.write(`${line}\n`);
  if (broken.length) {
    process.stderr.write(`check-links: ${broken.length} broken link(s) in ${n} page(s) and ${c} citation(s)\n`);
    process.exit(1);
  }
  process.stdout.write(`check-links: ${n} page(s) and ${c} citation(s), no broken link\n`);
}

// The manual the npm package carries: the repository's docs/, the one source, copied into
// the package's own docs/ when it is packed (packages/decom's `prepack`; its `postpack`
// removes the copy, which git ignores). Each page is copied as it is except its links, so
// that every link resolves in the unpacked package:
//   - a link to a page of docs/ (or a web address, or an #anchor) stays as written;
//   - a link to what the package ships from its own folder (`playbooks/`, `inventory/`:
//     its package.json "files") is pointed at that file inside the package;
//   - a link to anything else of the repository (its README, the sandbox's sources, the
//     deploy folder) becomes its text alone: it would resolve nowhere in the package.
// No web address is made up for what the package does not hold.
//   node ../../scripts/package-docs.mjs [--remove]   (from packages/decom, as its prepack/postpack)
// A reference-style link whose definition points outside docs/ is refused (exit 1, named):
// write it inline, so that it can become text.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { remark } from 'remark';

/** The checkout this script belongs to. */
const CHECKOUT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The published package's folder, as a path of the checkout. */
const PACKAGE = 'packages/decom';

/** A URL with a scheme (https:, mailto:) or an anchor of the page itself: never rewritten. */
const OUTSIDE = /^([a-z][a-z0-9+.-]*:|#)/i;

const toPosix = (p) => p.split(sep).join('/');

/** The files of `dir` below `root` (posix paths relative to root). */
function walk(root, dir) {
  const out = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...walk(root, path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/**
 * Where a link of the page `page` (a checkout path under docs/) points inside the package:
 * the URL to write, or undefined when the target is not in the package (the link becomes text).
 * `shipped`: the top-level names of the package's "files".
 */
export function packagedUrl(checkout, page, url, shipped) {
  if (OUTSIDE.test(url)) return url;
  const cut = url.search(/[?#]/);
  const path = cut < 0 ? url : url.slice(0, cut);
  const rest = cut < 0 ? '' : url.slice(cut);
  if (path.startsWith('/')) return undefined;
  const target = posix.normalize(posix.join(posix.dirname(page), path));
  // A page of docs/ stays as written, there or not: a broken one is the link checker's to name.
  if (target === 'docs' || target.startsWith('docs/')) return url;
  if (!target.startsWith(`${PACKAGE}/`) || !existsSync(join(checkout, target))) return undefined;
  const inPackage = target.slice(PACKAGE.length + 1);
  if (!shipped.includes(inPackage.split('/')[0])) return undefined;
  // The page sits at the same place in the package as in the checkout: docs/… .
  const relativeUrl = posix.relative(posix.dirname(page), inPackage) + (path.endsWith('/') ? '/' : '');
  return relativeUrl + rest;
}

/** Every node of an mdast tree, depth first. */
function* nodes(tree) {
  yield tree;
  for (const child of tree.children ?? []) yield* nodes(child);
}

/** A page's text with its links pointed into the package, or turned into their text. */
export function rewritePage(checkout, page, text, shipped) {
  const tree = remark().parse(text);
  const edits = [];
  for (const node of nodes(tree)) {
    if (node.type === 'definition') {
      const url = packagedUrl(checkout, page, node.url, shipped);
      if (url === undefined) throw new Error(`${page}:${node.position.start.line}: the definition [${node.label}] points outside the package (${node.url}); write its links inline`);
      if (url !== node.url) throw new Error(`${page}:${node.position.start.line}: the definition [${node.label}] points at ${node.url}, which the package holds elsewhere; write its links inline`);
    }
    if (node.type !== 'link') continue;
    const url = packagedUrl(checkout, page, node.url, shipped);
    if (url === node.url) continue;
    const { start, end } = node.position;
    const children = node.children ?? [];
    const label = children.length ? text.slice(children[0].position.start.offset, children.at(-1).position.end.offset) : '';
    const title = node.title ? ` "${node.title.replaceAll('"', '\\"')}"` : '';
    edits.push({ start: start.offset, end: end.offset, with: url === undefined ? label : `[${label}](${url}${title})` });
  }
  let out = text;
  for (const e of edits.sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.with + out.slice(e.end);
  return out;
}

/** Writes the package's docs/ into `packageDir` from the checkout's docs/. Returns the pages written. */
export function packageDocs(checkout = CHECKOUT, packageDir = join(checkout, PACKAGE)) {
  const manifest = JSON.parse(readFileSync(join(checkout, PACKAGE, 'package.json'), 'utf8'));
  const shipped = (manifest.files ?? []).map((f) => f.replace(/\/+$/, '').split('/')[0]).filter((f) => f !== 'docs');
  // Written aside, then put in place whole: a pack never sees half a manual.
  const staging = join(packageDir, `.docs-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  const pages = [];
  for (const file of walk(checkout, 'docs').sort()) {
    const to = join(staging, relative('docs', file));
    mkdirSync(dirname(to), { recursive: true });
    if (!file.endsWith('.md')) {
      cpSync(join(checkout, file), to);
      continue;
    }
    writeFileSync(to, rewritePage(checkout, toPosix(file), readFileSync(join(checkout, file), 'utf8'), shipped));
    pages.push(toPosix(file));
  }
  removeDocs(packageDir);
  renameSync(staging, join(packageDir, 'docs'));
  return pages;
}

/** Removes the package's docs/ copy. */
export function removeDocs(packageDir = join(CHECKOUT, PACKAGE)) {
  const docs = join(packageDir, 'docs');
  if (existsSync(docs) && statSync(docs).isDirectory()) rmSync(docs, { recursive: true, force: true });
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    if (process.argv.includes('--remove')) removeDocs();
    else process.stderr.write(`package-docs: ${packageDocs().length} page(s) of docs/ copied into ${PACKAGE}/docs\n`);
  } catch (e) {
    process.stderr.write(`package-docs: ${e.message}\n`);
    process.exit(1);
  }
}

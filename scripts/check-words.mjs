// The plain-words checker `npm run check:words` runs over the user pages (README.md,
// docs/commands/*.md, and the docs pages in USER_PAGES; a listed page that does not exist
// is skipped). Each page is parsed as GitHub renders it (remark with remark-gfm), and two
// rules hold on its visible text, fenced and indented code blocks excepted:
// - every sentence and every table cell is under MAX_WORDS words. Words are the
//   whitespace-separated tokens of the text, inline code included. A paragraph, a list
//   item's paragraph or a heading is cut into sentences after a `.`, `!` or `?` of its
//   prose (not inside inline code) that is followed, past any closing bracket or quote,
//   by white space or the block's end; a colon or a semicolon ends no sentence. A table
//   cell counts whole.
// - no source path: no file name ending in .ts, .mts, .cts, .js, .mjs or .cjs (Node.js,
//   the runtime's name, excepted), no path into a package's src/ and none into the
//   sandbox package, in prose, inline code, link text or a link's target.
//   node scripts/check-words.mjs [ROOT]   (ROOT: the tree to check, default this checkout)
// Prints each violation as FILE:LINE: N words: "first words…" (or FILE:LINE: source
// path "…"), one per line, and exits 1 if there is any.
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { remark } from 'remark';
import remarkGfm from 'remark-gfm';

/** The checkout this script belongs to. */
const CHECKOUT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** A sentence or a table cell of this many words or more is a violation. */
export const MAX_WORDS = 40;

/** The user pages, relative to the root, besides every page of docs/commands/. */
export const USER_PAGES = [
  'README.md',
  'docs/inventory.md',
  'docs/playbooks.md',
  'docs/findings.md',
  'docs/audit-outputs.md',
  'docs/sandbox.md',
  'docs/versions.md',
  'docs/kubespray.md',
  'docs/glossary.md',
];
const COMMAND_PAGES = 'docs/commands';

/** A file name of a source: JavaScript's and TypeScript's extensions. */
const SOURCE_FILE = /(?<![\w.@/-])(?:[\w.@-]+\/)*[\w@-][\w.@-]*\.(?:ts|mts|cts|js|mjs|cjs)(?![\w-])/g;
/** The runtime's name, which reads as a file name but is none. */
const RUNTIME_NAME = /^node\.js$/i;
/** A path into a package's sources (src/, with or without packages/NAME/ before it) or into the sandbox package. */
const SOURCE_DIR = /(?<![\w.-])src\/|(?<![\w.-])packages\/sandbox(?:\/|$)/g;

/** The sentence's end: a stop, any closing brackets and quotes, then white space or the end. */
const STOP = /[.!?]/;
const CLOSING = /[)\]"'”’]/;

/** The user pages of the root that exist, relative to it, in a stable order. */
export function userPages(root = CHECKOUT) {
  const commands = existsSync(join(root, COMMAND_PAGES))
    ? readdirSync(join(root, COMMAND_PAGES)).filter((f) => f.endsWith('.md')).sort().map((f) => `${COMMAND_PAGES}/${f}`)
    : [];
  const [readme, ...docs] = USER_PAGES;
  return [readme, ...commands, ...docs].filter((p) => existsSync(join(root, p)));
}

/**
 * The visible text of a block's inline content as pieces: each with its text, the source
 * line it starts on, and whether it is inline code. A link's text is kept, an image's alt
 * text too; raw HTML is not visible and is left out.
 */
function pieces(node, out = []) {
  for (const child of node.children ?? []) {
    const line = child.position?.start.line ?? node.position?.start.line ?? 1;
    if (child.type === 'text') {
      child.value.split('\n').forEach((part, i) => out.push({ text: i === 0 ? part : `\n${part}`, line: line + i, code: false }));
    } else if (child.type === 'inlineCode') {
      out.push({ text: child.value, line, code: true });
    } else if (child.type === 'break') {
      out.push({ text: '\n', line, code: false });
    } else if (child.type === 'image' || child.type === 'imageReference') {
      out.push({ text: child.alt ?? '', line, code: false });
    } else if (child.children) {
      pieces(child, out);
    }
  }
  return out;
}

/** The characters of the pieces, each with the line it is on and whether it is code. */
function characters(parts) {
  const chars = [];
  for (const p of parts) for (const c of p.text) chars.push({ c, line: p.line, code: p.code });
  return chars;
}

/** Cuts a block's characters into sentences: each as its text and the line its first word is on. */
function sentences(chars) {
  const out = [];
  let start = 0;
  const flush = (end) => {
    const slice = chars.slice(start, end);
    const first = slice.find((ch) => !/\s/.test(ch.c));
    if (first) out.push({ text: slice.map((ch) => ch.c).join(''), line: first.line });
    start = end;
  };
  for (let i = 0; i < chars.length; i++) {
    if (chars[i].code || !STOP.test(chars[i].c)) continue;
    let j = i + 1;
    while (j < chars.length && !chars[j].code && CLOSING.test(chars[j].c)) j++;
    if (j === chars.length || /\s/.test(chars[j].c)) {
      flush(j);
      i = j - 1;
    }
  }
  flush(chars.length);
  return out;
}

const words = (text) => text.split(/\s+/).filter(Boolean);

/** The first few words of a text, for the message. */
function opening(text) {
  const w = words(text);
  return w.length > 8 ? `${w.slice(0, 8).join(' ')}…` : w.join(' ');
}

/** The source paths a text names. */
function sourcePaths(text) {
  const found = [];
  for (const m of text.matchAll(SOURCE_FILE)) if (!RUNTIME_NAME.test(m[0])) found.push(m[0]);
  for (const m of text.matchAll(SOURCE_DIR)) {
    // The whole path the match is in, for the message.
    const before = text.slice(0, m.index).match(/[^\s`()[\]<>"']*$/)[0];
    const after = text.slice(m.index).match(/^[^\s`()[\]<>"']*/)[0];
    found.push(`${before}${after}`);
  }
  return [...new Set(found)];
}

/** Visits every node of the tree below `node`, code blocks left out. */
function visit(node, fn) {
  if (node.type === 'code') return;
  fn(node);
  for (const child of node.children ?? []) visit(child, fn);
}

/**
 * The violations of one page's text, each as { line, message }: the sentences and table
 * cells of MAX_WORDS words or more, and the source paths named.
 */
export function checkPage(text) {
  const tree = remark().use(remarkGfm).parse(text);
  const found = [];
  const long = (line, sentence) => {
    const n = words(sentence).length;
    if (n >= MAX_WORDS) found.push({ line, message: `${n} words: "${opening(sentence)}"` });
  };
  visit(tree, (node) => {
    if (node.type === 'paragraph' || node.type === 'heading') {
      for (const s of sentences(characters(pieces(node)))) long(s.line, s.text);
    } else if (node.type === 'tableCell') {
      const parts = pieces(node);
      long(parts.find((p) => p.text.trim())?.line ?? node.position.start.line, parts.map((p) => p.text).join(''));
    }
    const line = node.position?.start.line ?? 1;
    if (node.type === 'text' || node.type === 'inlineCode') {
      for (const path of sourcePaths(node.value)) found.push({ line, message: `source path "${path}"` });
    } else if (node.type === 'link' || node.type === 'definition' || node.type === 'image') {
      for (const path of sourcePaths(decodeURIComponent(node.url))) found.push({ line, message: `source path "${path}" (a link's target)` });
    }
  });
  return found.sort((a, b) => a.line - b.line);
}

/** Checks the root's user pages. Returns the violations as "FILE:LINE: MESSAGE", and how many pages were read. */
export function checkWords(root = CHECKOUT) {
  root = resolve(root);
  const files = userPages(root);
  const violations = [];
  for (const file of files) {
    for (const v of checkPage(readFileSync(join(root, file), 'utf8'))) violations.push(`${file}:${v.line}: ${v.message}`);
  }
  return { violations, pages: files.length };
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = process.argv[2] ?? CHECKOUT;
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    process.stderr.write(`check-words: ${root}: not a directory\n`);
    process.exit(2);
  }
  const { violations, pages } = checkWords(root);
  for (const line of violations) process.stdout.write(`${line}\n`);
  if (violations.length) {
    process.stderr.write(`check-words: ${violations.length} violation(s) in ${pages} user page(s): sentences and table cells stay under ${MAX_WORDS} words, and no source path is named\n`);
    process.exit(1);
  }
  process.stdout.write(`check-words: ${pages} user page(s), every sentence and table cell under ${MAX_WORDS} words, no source path\n`);
}

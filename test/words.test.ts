// The plain-words checker (scripts/check-words.mjs, `npm run check:words`): the real user
// pages pass; on a planted tree, a sentence of 40 words, a table cell of 40 words, a list
// item of 40 words joined by a colon and a semicolon, and a source path (in prose, in inline
// code, in a link's target) each fail the run, named by file and line, while 39 words, a
// fenced code block and a link to a docs page pass, and a page that is no user page is not read.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileTree, tempDir } from '../packages/decom/test/helpers/temp.js';
// @ts-expect-error: a plain ESM script of the repository, without type declarations
import { MAX_WORDS } from '../scripts/check-words.mjs';

const CHECKOUT = join(import.meta.dirname, '..');
const SCRIPT = join(CHECKOUT, 'scripts', 'check-words.mjs');

function check(root?: string) {
  const r = spawnSync(process.execPath, [SCRIPT, ...(root ? [root] : [])], { cwd: CHECKOUT, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}`, lines: r.stdout.split('\n').filter(Boolean) };
}

/** A text of n words, word1 … wordN, without a stop. */
const words = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `word${from + i}`).join(' ');

/** The 1-based line of the first line of `text` that contains `marker`. */
const lineOf = (text: string, marker: string) => text.split('\n').findIndex((l) => l.includes(marker)) + 1;

describe('check:words on the real tree', () => {
  it('finds every sentence and table cell of the user pages under 40 words, and no source path', () => {
    // The bound the issue sets: under 40 words.
    expect(MAX_WORDS).toBe(40);
    const r = check();
    expect(r.out, r.out).toMatch(/every sentence and table cell under 40 words, no source path/);
    expect(r.status, r.out).toBe(0);
  });
});

describe('check:words on a planted tree', () => {
  // Spelled in pieces so that this file itself names no source path in a way a reader would take for one.
  const source = ['src', 'foo.ts'].join('/');
  const page = [
    '# A planted page',
    '',
    `Long1 ${words(39, 2)}. Short ${words(38, 2)}.`,
    '',
    `Fine1 ${words(38, 2)}. Also fine ${words(10)}!`,
    '',
    `- Item1 ${words(19, 2)}: ${words(10, 21)}; ${words(10, 31)}`,
    '',
    '| what | why |',
    '|---|---|',
    `| Cell1 ${words(39, 2)} | short |`,
    `| Fine2 ${words(38, 2)} | \`${words(3)}\` |`,
    '',
    `It names ${source} in prose.`,
    '',
    `Inline code names \`packages/decom/${source}\` too.`,
    '',
    'A [link](../packages/decom/src/cli/) to the sources, and [a glossary entry](glossary.md#interlock), which is fine.',
    '',
    '```sh',
    `# ${words(80)}. ${source}`,
    '```',
    '',
  ].join('\n');
  // A page of docs/commands/ that does not exist in the checkout: spelled in pieces, since the link checker reads this file too.
  const planted = ['docs', 'commands', 'planted.md'].join('/');
  const command = `# A command page\n\nCommand1 ${words(45, 2)}.\n`;
  const root = fileTree(tempDir('decom-words-'), {
    'docs/versions.md': page,
    [planted]: command,
    // No user page: never read.
    'docs/design.md': `Design ${words(60)}. It names ${source}.\n`,
  });

  it('fails, naming each planted violation by file and line, and nothing else', () => {
    const r = check(root);
    expect(r.status, r.out).toBe(1);
    expect(r.lines).toEqual([
      `${planted}:3: 46 words: "Command1 word2 word3 word4 word5 word6 word7 word8…"`,
      `docs/versions.md:${lineOf(page, 'Long1')}: 40 words: "Long1 word2 word3 word4 word5 word6 word7 word8…"`,
      `docs/versions.md:${lineOf(page, 'Item1')}: 40 words: "Item1 word2 word3 word4 word5 word6 word7 word8…"`,
      `docs/versions.md:${lineOf(page, 'Cell1')}: 40 words: "Cell1 word2 word3 word4 word5 word6 word7 word8…"`,
      `docs/versions.md:${lineOf(page, 'in prose')}: source path "${source}"`,
      `docs/versions.md:${lineOf(page, 'Inline code')}: source path "packages/decom/${source}"`,
      `docs/versions.md:${lineOf(page, 'A [link]')}: source path "../packages/decom/src/cli/" (a link's target)`,
    ]);
    expect(r.out).toContain('check-words: 7 violation(s) in 2 user page(s)');
  });

  it('counts a sentence across soft line breaks, and names the line its first word is on', () => {
    const wrapped = fileTree(tempDir('decom-words-'), { 'docs/inventory.md': `Intro.\n\nFirst ${words(20, 2)}\n${words(19, 22)}. Next.\n` });
    const r = check(wrapped);
    expect(r.lines).toEqual([`docs/inventory.md:3: 40 words: "First word2 word3 word4 word5 word6 word7 word8…"`]);
  });

  it('passes a tree of 39-word sentences and cells, a code block and links to docs pages', () => {
    const fine = fileTree(tempDir('decom-words-'), {
      'README.md': `# decom\n\n${words(39)}. See [the glossary](docs/glossary.md#tier).\n\n| a |\n|---|\n| ${words(39)} |\n\n\`\`\`\n${words(100)} ${source}\n\`\`\`\n`,
    });
    const r = check(fine);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toContain('check-words: 1 user page(s), every sentence and table cell under 40 words, no source path');
  });
});

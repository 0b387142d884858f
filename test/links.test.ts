// The kept link checker (scripts/check-links.mjs, `npm run check:links`): the real tree has
// no broken link; on a copy of the documentation outside git, a planted link to a missing
// page, a planted link to a missing heading and a planted citation of a missing heading in
// a source comment each fail the run, and each is named where it was planted. With
// --package, on a package dir laid out as npm packs decom (its docs/ written by
// scripts/package-docs.mjs): no broken link, each rewrite as that script says, and a
// citation planted in dist/ or docs/ copied without the rewrite each fail, named.
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../packages/decom/test/helpers/temp.js';
// @ts-expect-error: a plain ESM script of the repository, without type declarations
import { packageDocs } from '../scripts/package-docs.mjs';

const CHECKOUT = join(import.meta.dirname, '..');
const SCRIPT = join(CHECKOUT, 'scripts', 'check-links.mjs');

// Spelled in pieces: the checker reads this file's text too, and these links are meant to be broken.
const DESIGN = ['docs', 'design.md'].join('/');
const MISSING_PAGE = ['docs', 'no-such-page.md'].join('/');
const MISSING_HEADING = ['no-such', 'heading'].join('-');

/** What the copy holds: the checked pages, and one source file whose comment cites a heading of the design page. */
const COPIED = ['README.md', 'packages/decom/README.md', 'docs', 'packages/decom/src/steps/index.ts'];
const SOURCE = 'packages/decom/src/steps/index.ts';

function check(root?: string, asPackage = false) {
  const r = spawnSync(process.execPath, [SCRIPT, ...(asPackage ? ['--package'] : []), ...(root ? [root] : [])], { cwd: CHECKOUT, encoding: 'utf8' });
  return { status: r.status, pid: r.pid, out: `${r.stdout}${r.stderr}`, lines: r.stdout.split('\n').filter(Boolean) };
}

const tempFiles = (root: string, pid?: number) => readdirSync(root).filter((f) => f.startsWith(`.check-links-citations-${pid ?? ''}`));

describe('check:links on the real tree', () => {
  it('finds no broken link in README.md, packages/decom/README.md, docs/ or the sources\' citations', () => {
    const r = check();
    expect(r.out, r.out).toMatch(/no broken link/);
    expect(r.status, r.out).toBe(0);
    // It cited at least the design page's headings the code names, and left no temporary page behind.
    expect(r.out).toMatch(/and [1-9]\d* citation\(s\)/);
    expect(tempFiles(CHECKOUT, r.pid)).toEqual([]);
  });
});

describe('check:links on a copy of the documentation, outside git', () => {
  const root = tempDir('decom-links-');

  /** A fresh copy of COPIED under root/name. */
  const copy = (name: string) => {
    const dir = join(root, name);
    for (const p of COPIED) {
      mkdirSync(dirname(join(dir, p)), { recursive: true });
      cpSync(join(CHECKOUT, p), join(dir, p), { recursive: true });
    }
    return dir;
  };
  /** Appends a line to a file of the copy; returns its line number. */
  const plant = (dir: string, file: string, line: string) => {
    appendFileSync(join(dir, file), `\n${line}\n`);
    return readFileSync(join(dir, file), 'utf8').split('\n').length - 1;
  };

  let baseline: ReturnType<typeof check>;
  beforeAll(() => {
    baseline = check(copy('baseline'));
  });

  /** The lines a planted run prints that the unplanted copy did not: exactly the planted link. */
  const added = (r: ReturnType<typeof check>) => r.lines.filter((l) => !baseline.lines.includes(l) && !l.startsWith('check-links:'));

  it('reads the copied citation (the walk finds it without git) and finds it valid', () => {
    expect(baseline.out).toMatch(/ and 1 citation\(s\)/);
    expect(baseline.out).not.toContain(SOURCE);
    expect(tempFiles(join(root, 'baseline'))).toEqual([]);
  });

  it('fails on a link to a missing file, naming it', () => {
    const dir = copy('missing-file');
    const line = plant(dir, 'README.md', `See [the missing page](${MISSING_PAGE}).`);
    const r = check(dir);
    expect(r.status, r.out).toBe(1);
    expect(added(r)).toEqual([expect.stringMatching(new RegExp(`^README\\.md:${line}:\\d+: Cannot find file \`${MISSING_PAGE.replace('.', '\\.')}\``))]);
    expect(tempFiles(dir)).toEqual([]);
  });

  it('fails on a link to a missing heading of the design page, naming it', () => {
    const dir = copy('missing-anchor');
    const line = plant(dir, 'docs/playbooks.md', `See [nothing](design.md#${MISSING_HEADING}).`);
    const r = check(dir);
    expect(r.status, r.out).toBe(1);
    expect(added(r)).toEqual([expect.stringMatching(new RegExp(`^docs/playbooks\\.md:${line}:\\d+: Cannot find heading for \`#${MISSING_HEADING}\` in \`design\\.md\``))]);
    expect(tempFiles(dir)).toEqual([]);
  });

  it('fails on a code comment citing a missing heading, naming the source file and line', () => {
    const dir = copy('missing-citation');
    const line = plant(dir, SOURCE, `// The order: ${DESIGN}#${MISSING_HEADING}.`);
    const r = check(dir);
    expect(r.status, r.out).toBe(1);
    expect(added(r)).toEqual([`${SOURCE}:${line}:15: Cannot find heading for \`#${MISSING_HEADING}\` in \`${DESIGN}\` (cited as ${DESIGN}#${MISSING_HEADING})`]);
    expect(tempFiles(dir)).toEqual([]);
  });
});

describe('check:links --package on a package dir, its docs/ written by the copy step', () => {
  const root = tempDir('decom-links-package-');
  /** A package dir as npm packs decom: its README, LICENSE, playbooks, inventories, docs/ and one dist/ module citing pages. */
  const pack = (name: string) => {
    const dir = join(root, name);
    mkdirSync(join(dir, 'dist'), { recursive: true });
    for (const p of ['README.md', 'LICENSE', 'playbooks', 'inventory']) cpSync(join(CHECKOUT, 'packages', 'decom', p), join(dir, p), { recursive: true });
    packageDocs(CHECKOUT, dir);
    writeFileSync(join(dir, 'dist', 'cli.js'), `// The order: ${DESIGN}#the-order-of-a-reset.\nconsole.log('see docs/commands/run.md');\n`);
    return dir;
  };
  const page = (dir: string, p: string) => readFileSync(join(dir, 'docs', p), 'utf8');

  it('finds no broken link, reading dist/ too, and the copy step rewrote the links that leave the package', () => {
    const dir = pack('clean');
    const r = check(dir, true);
    expect(r.out, r.out).toMatch(/no broken link/);
    expect(r.status, r.out).toBe(0);
    // dist/ is read with --package only: its two citations are the difference.
    const citedCount = (out: string) => Number(/ and (\d+) citation\(s\)/.exec(out)?.[1]);
    expect(citedCount(r.out)).toBe(citedCount(check(dir).out) + 2);
    // A link to an example inventory points at the package's own; one to the repository's README is its text alone.
    expect(page(dir, 'inventory.md')).toContain('](../inventory/kubespray/)');
    expect(page(dir, 'inventory.md')).not.toContain('../packages/');
    expect(page(dir, 'commands/run.md')).not.toMatch(/\]\([./]*README\.md/);
    // A link between pages stays as written.
    expect(page(dir, 'commands/run.md')).toContain('](../playbooks.md');
    expect(tempFiles(dir)).toEqual([]);
  });

  it('fails on a dist/ citation of a missing heading, naming the module and line', () => {
    const dir = pack('missing-citation');
    writeFileSync(join(dir, 'dist', 'cli.js'), `// The order: ${DESIGN}#${MISSING_HEADING}.\n`);
    const r = check(dir, true);
    expect(r.status, r.out).toBe(1);
    expect(r.lines.filter((l) => !l.startsWith('check-links:'))).toEqual([`dist/cli.js:1:15: Cannot find heading for \`#${MISSING_HEADING}\` in \`${DESIGN}\` (cited as ${DESIGN}#${MISSING_HEADING})`]);
  });

  it("fails on docs/ copied without the rewrite, naming each link into the repository", () => {
    const dir = pack('unrewritten');
    rmSync(join(dir, 'docs'), { recursive: true });
    cpSync(join(CHECKOUT, 'docs'), join(dir, 'docs'), { recursive: true });
    const r = check(dir, true);
    expect(r.status, r.out).toBe(1);
    expect(r.lines).toContainEqual(expect.stringMatching(/^docs\/inventory\.md:\d+:\d+: Cannot find file `\.\.\/packages\/decom\/inventory\/kubespray`/));
  });
});

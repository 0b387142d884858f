// What `./scripts/test --changed` runs for a change (docs/development.md#the-short-loop): the
// paths changed since main (committed on the branch since `git merge-base HEAD main`, staged,
// unstaged, untracked and not ignored), mapped by folder to the node test folders that run
// them (TABLE). The unit tests are vitest's own `--changed`: it follows the imports. Node
// tests start dist/cli.js, so no import leads to them: for them the map is by folder.
//   node scripts/changed-tests.mjs [--base REF]           what would run and why, one line a part
//   node scripts/changed-tests.mjs [--base REF] --shell   the same as bash assignments (scripts/test)
// REF is main by default (origin/main when there is no local main). No dependencies.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The checkout this script belongs to. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

const RUN = 'packages/decom/test/run';
const VERIFY = 'packages/decom/test/verify';
const AUDIT = 'packages/decom/test/audit';
const REACH = 'packages/decom/test/reach';
const FIRST_CONTACT = 'packages/decom/test/first-contact';
const PACKAGE = 'packages/decom/test/package';
const API = 'packages/sandbox/test/api';
const UP = 'packages/sandbox/test/up';
const IMAGE = 'packages/sandbox/test/image';

/** Every node test folder, in the order they are run and listed (test/changed-tests.test.ts holds it to the disk). */
export const NODE_FOLDERS = [RUN, VERIFY, AUDIT, FIRST_CONTACT, REACH, PACKAGE, API, UP, IMAGE];
const COMMANDS = [RUN, VERIFY, AUDIT, FIRST_CONTACT];
const RESET = "the reset's; verify's tests reset with `decom run` first";

/**
 * What a changed path runs, the first row that matches: a path or a folder (ending in '/'),
 * its node test folders, and why. A unit test file (`*.test.ts` outside packages/*\/test/)
 * never gets here: vitest's --changed runs it. A file under packages/<pkg>/test/<folder>/
 * that no row names runs its own folder.
 * @type {Array<[string, string[], string]>}
 */
export const TABLE = [
  ['packages/decom/test/helpers/', NODE_FOLDERS, "a test helper: every node test uses them, the sandbox's too"],
  ['packages/decom/test/fixtures/versions/', [VERIFY], "field-versions.test.ts holds them to the sandbox's components"],
  ['packages/decom/src/run/', [RUN], '`decom run`'],
  ['packages/decom/src/journal/', [RUN], "`decom journal`, whose node test is run/node-lock.test.ts"],
  ['packages/decom/src/verify/', [VERIFY], '`decom verify`'],
  ['packages/decom/src/audit/', [AUDIT], '`decom audit`'],
  ['packages/decom/src/ping/', [FIRST_CONTACT], '`decom ping`'],
  ['packages/decom/src/hosts/', [FIRST_CONTACT], '`decom hosts trust`'],
  ['packages/decom/src/firewall/', [RUN, VERIFY], RESET],
  ['packages/decom/src/playbook/', [RUN, VERIFY], RESET],
  ['packages/decom/playbooks/', [RUN, VERIFY], RESET],
  ['packages/decom/src/inventory/', [...COMMANDS, REACH], 'how every command reads and reaches hosts; reach/ holds them to what Ansible reaches'],
  ['packages/decom/src/transport/', [...COMMANDS, REACH], 'how every command reaches hosts; reach/ holds them to what Ansible reaches'],
  // The rest: util, cri, probes, rules, cluster, engine, steps, cli.ts.
  ['packages/decom/src/', COMMANDS, "used by every command: the audit's fix runs steps through the engine, verify asks the API through cluster/"],
  ['packages/decom/deploy/', [AUDIT, IMAGE], "the audit's image and manifests: deploy.test.ts, audit-image.test.ts"],
  ['packages/decom/package.json', [PACKAGE], 'what npm packs and installs'],
  ['README.md', [PACKAGE], 'its tarball install is what package.test.ts runs'],
  ['packages/sandbox/src/api/', [API], "the sandbox's Kubernetes API"],
  ['packages/sandbox/src/scenarios/', [UP, API], 'the scenarios, the API scenarios among them'],
  ['packages/sandbox/src/audit-image.ts', [IMAGE, AUDIT], "the audit image's build"],
  ['packages/sandbox/src/', [UP], 'the sandbox: nodes, up and down, the kubelet stand-in'],
];

/** A unit test file: vitest's --changed runs it when it changes. */
const UNIT_TEST = /\.test\.[cm]?[jt]s$/;
/** A node test folder of its own: packages/<pkg>/test/<folder>/… (helpers and fixtures are not one). */
const TEST_FOLDER = /^(packages\/[^/]+\/test\/(?!helpers\/|fixtures\/)[^/]+)\//;
/** What vitest's import graph can hold (the only changes its --changed can follow). */
const MODULE = /\.(ts|mts|cts|js|mjs|cjs|json)$/;
/** vitest's forceRerunTriggers: a change to one runs every test of the project. */
const RERUN_ALL = /(^|\/)(package\.json|(vitest|vite)\.config\.[^/]+)$/;
/** Documentation: nothing to run (`npm run check:links` checks its links). */
const DOCS = /^docs\/|\.md$/;

/** The table row a path falls in, or undefined. */
const rowOf = (path) => TABLE.find(([prefix]) => (prefix.endsWith('/') ? path.startsWith(prefix) : path === prefix));

/** "a, b, c and 2 more". */
const some = (paths) => (paths.length <= 3 ? paths.join(', ') : `${paths.slice(0, 3).join(', ')} and ${paths.length - 3} more`);

/**
 * What a list of changed paths (relative to the checkout) runs: whether the unit part is
 * worth starting (a changed file vitest's graph can hold), the node test folders in
 * NODE_FOLDERS' order, and one line per kind of change saying what it runs and why.
 * Pure: no git, no disk.
 * @param {string[]} paths
 * @returns {{ unitNeeded: boolean, nodeFolders: string[], reasons: string[] }}
 */
export function testsFor(paths) {
  const folders = new Set();
  /** @type {Map<string, string[]>} what a group of paths runs → the paths */
  const groups = new Map();
  const add = (what, path) => groups.set(what, [...(groups.get(what) ?? []), path]);
  let unitNeeded = false;
  for (const path of [...new Set(paths)].sort()) {
    if (MODULE.test(path)) unitNeeded = true;
    if (RERUN_ALL.test(path)) add('every unit test (vitest --changed runs them all when a package.json or vitest.config.* changes)', path);
    const row = rowOf(path);
    const own = TEST_FOLDER.exec(path)?.[1];
    if (UNIT_TEST.test(path) && !/^packages\/[^/]+\/test\//.test(path)) {
      add('that unit test (vitest --changed runs a changed test file)', path);
    } else if (row) {
      row[1].forEach((f) => folders.add(f));
      add(`node tests in ${row[1].join(', ')} (${row[2]})`, path);
    } else if (own) {
      folders.add(own);
      add(`node tests in ${own} (its own folder)`, path);
    } else if (DOCS.test(path)) {
      add('nothing to run: documentation (`npm run check:links` checks its links)', path);
    } else if (MODULE.test(path)) {
      if (!RERUN_ALL.test(path)) add('the unit tests that import it, if any; no node test folder maps', path);
    } else {
      add('no test found: nothing imports it and no node test folder maps (a file read at run time: run the tests that read it by name)', path);
    }
  }
  const known = NODE_FOLDERS.filter((f) => folders.has(f));
  const others = [...folders].filter((f) => !NODE_FOLDERS.includes(f)).sort();
  const reasons = [...groups].map(([what, group]) => `changed: ${some(group)} → ${what}`);
  return { unitNeeded, nodeFolders: [...known, ...others], reasons };
}

const git = (args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** The ref a change is counted from: main, or origin/main in a clone without a local main. */
export function defaultRef() {
  for (const ref of ['main', 'origin/main']) {
    try {
      git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
      return ref;
    } catch {
      // not here: the next one
    }
  }
  throw new Error('neither main nor origin/main is a commit here: give one with --base REF');
}

/**
 * The paths changed since `base` (a commit): committed since, staged and unstaged (one diff
 * of base against the working tree, deletions and both sides of a rename included), and
 * the untracked files git does not ignore.
 */
export function changedPaths(base) {
  const diffed = git(['diff', '--name-only', '--no-renames', '-z', base]).split('\0');
  const untracked = git(['ls-files', '--others', '--exclude-standard', '-z']).split('\0');
  return [...new Set([...diffed, ...untracked].filter(Boolean))].sort();
}

/** The plan for scripts/test --changed: the merge-base, testsFor()'s answer, and the lines to print. */
export function plan(ref = defaultRef()) {
  const base = git(['merge-base', 'HEAD', ref]).trim();
  const paths = changedPaths(base);
  const { unitNeeded, nodeFolders, reasons } = testsFor(paths);
  const short = base.slice(0, 12);
  const lines = [
    `base: ${short} (git merge-base HEAD ${ref}); ${paths.length} path(s) changed since, staged, unstaged or untracked`,
    ...(paths.length ? reasons : [`changed: nothing since ${ref}`]),
    unitNeeded
      ? `unit: vitest run --project unit --changed ${short} (the unit tests whose imports reach a changed file)`
      : 'unit: none (no changed file is one vitest can import: .ts, .js, .mjs, .cjs, .json)',
    nodeFolders.length
      ? `node: vitest run --project image --project node --project host ${nodeFolders.map((f) => `${f}/`).join(' ')} (the folders above)`
      : 'node: none (no changed path maps to a node test folder)',
  ];
  return { base, unitNeeded, nodeFolders, lines };
}

/** A word for bash, single-quoted. */
const quote = (s) => `'${s.replaceAll("'", "'\\''")}'`;

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  let ref;
  let shell = false;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--shell') shell = true;
    else if (args[i] === '--base' && args[i + 1]) ref = args[++i];
    else {
      process.stderr.write(`changed-tests: unknown argument '${args[i]}' (usage: node scripts/changed-tests.mjs [--base REF] [--shell])\n`);
      process.exit(2);
    }
  }
  let p;
  try {
    p = plan(ref);
  } catch (e) {
    process.stderr.write(`changed-tests: ${String(e.stderr || e.message).trim().split('\n')[0]}\n`);
    process.exit(2);
  }
  if (shell) {
    process.stdout.write(`base=${quote(p.base)}\nunit=${p.unitNeeded ? 1 : 0}\n`);
    process.stdout.write(`folders=(${p.nodeFolders.map((f) => quote(`${f}/`)).join(' ')})\n`);
    process.stdout.write(`lines=(${p.lines.map(quote).join(' ')})\n`);
  } else {
    process.stdout.write(p.lines.map((l) => `${l}\n`).join(''));
  }
}

/**
 * decom's floors (docs/development.md, "Floors"): `npm run floors`, and packages/decom/src/floors.test.ts.
 *
 * The folders of packages/decom/src stand on floors, from the ground up. A module may
 * import from its own floor and from the floors below it, never from one above, and
 * never in a circle. A new folder goes on exactly one floor: added to FLOORS below,
 * nothing else; a module in a folder on no floor fails the check.
 *
 * Paths are relative to where depcruise runs (the repository's root), so the test can
 * run the same config on a copy of the tree laid out the same way.
 */
const { join } = require('node:path');

const FLOORS = [
  ['util'],
  ['transport', 'inventory', 'cri'],
  ['probes'],
  ['rules'],
  ['engine', 'steps', 'cluster', 'firewall', 'playbook'],
  ['run', 'verify', 'audit', 'journal', 'ping', 'hosts'],
  ['cli.ts'],
];

const SRC = '^packages/decom/src/';
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A floor's entries as one regex: a folder's every module, or a file at the top of src (the cli). */
const on = (entries) => `${SRC}(${entries.map((e) => (e.endsWith('.ts') ? `${escape(e)}$` : `${escape(e)}/`)).join('|')})`;

const upward = FLOORS.slice(0, -1).map((floor, i) => ({
  name: `upward-from-floor-${i + 1}`,
  severity: 'error',
  comment: `${floor.join(', ')} (floor ${i + 1}) may import only from floors 1-${i + 1}, never from ${FLOORS.slice(i + 1).flat().join(', ')}`,
  from: { path: on(floor) },
  to: { path: on(FLOORS.slice(i + 1).flat()) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'a circle of imports has no floor order: break it by moving what both need down a floor',
      from: { path: SRC },
      to: { circular: true },
    },
    {
      name: 'no-sandbox',
      severity: 'error',
      comment: 'decom imports nothing of the sandbox (packages/sandbox, the decom-sandbox package): the sandbox stands above it',
      from: { path: SRC },
      to: { path: '(^|/)packages/sandbox/|(^|/)node_modules/decom-sandbox(/|$)|^decom-sandbox(/|$)' },
    },
  ],
  required: [
    {
      name: 'on-a-floor',
      severity: 'error',
      comment: 'every module of packages/decom/src is in a folder on a floor (or is src/cli.ts): add a new folder to FLOORS in .dependency-cruiser.cjs',
      module: { path: SRC, pathNot: on(FLOORS.flat()) },
      // Nothing matches: a module in a folder on no floor fails whatever it imports.
      to: { path: '^$' },
    },
  ],
  options: {
    // The unit tests beside the sources are not the product: they may reach the test helpers.
    exclude: { path: '\\.test\\.ts$' },
    // Type-only imports count: a floor holds for types too.
    tsPreCompilationDeps: true,
    // '.js' specifiers resolve to the .ts sources, as tsc resolves them.
    // (Absolute: TypeScript resolves its `extends` wrongly from a relative file name.)
    tsConfig: { fileName: join(__dirname, 'packages/decom/tsconfig.json') },
    doNotFollow: { path: ['node_modules', '(^|/)packages/sandbox/'] },
    moduleSystems: ['es6', 'cjs'],
  },
};

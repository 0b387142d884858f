// The floors of packages/decom/src (docs/development.md#floors), as `npm run floors` checks them:
// the tree as it is passes, and a copy of it with a fault planted fails on that fault,
// naming the rule and the file.
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../test/helpers/temp.js';

const CHECKOUT = join(import.meta.dirname, '..', '..', '..');
const CONFIG = join(CHECKOUT, '.dependency-cruiser.cjs');
const DEPCRUISE = join(CHECKOUT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const SRC = join('packages', 'decom', 'src');

const work = tempDir('decom-floors-');
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** depcruise with the checkout's config, on packages/decom/src under `root`. */
const cruise = (root: string) => {
  const r = spawnSync(process.execPath, [DEPCRUISE, SRC, '--config', CONFIG], { cwd: root, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
};

/** A copy of the sources laid out as in the checkout (the config's paths are relative to where it runs), its packages resolved as there. */
let copies = 0;
const copy = (): string => {
  const root = join(work, String(++copies));
  cpSync(join(CHECKOUT, SRC), join(root, SRC), { recursive: true });
  symlinkSync(join(CHECKOUT, 'node_modules'), join(root, 'node_modules'));
  return root;
};
const plant = (root: string, file: string, text: string) => {
  mkdirSync(dirname(join(root, SRC, file)), { recursive: true });
  writeFileSync(join(root, SRC, file), text);
};
const add = (root: string, file: string, line: string) => appendFileSync(join(root, SRC, file), `\n${line}\n`);
const at = (file: string) => `packages/decom/src/${file}`;

describe('the floors of packages/decom/src', () => {
  it('hold in the tree as it is', () => {
    const r = cruise(CHECKOUT);
    expect(r.out).toContain('no dependency violations found');
    expect(r.code, r.out).toBe(0);
  });

  it('hold in a copy of it, checked the same way', () => {
    const r = cruise(copy());
    expect(r.out).toContain('no dependency violations found');
    expect(r.code, r.out).toBe(0);
  });

  it('fail on an import from a higher floor, a type-only one too, naming the rule and the file', () => {
    const root = copy();
    add(root, 'util/errors.ts', "import '../run/cli.js';");
    add(root, 'rules/residue.ts', "import type { Step } from '../engine/step.js';\nexport type Planted = Step;");
    const r = cruise(root);
    expect(r.code, r.out).not.toBe(0);
    expect(r.out).toContain(`upward-from-floor-1: ${at('util/errors.ts')} → ${at('run/cli.ts')}`);
    expect(r.out).toContain(`upward-from-floor-4: ${at('rules/residue.ts')} → ${at('engine/step.ts')}`);
  });

  it('fail on a circle, even within one floor', () => {
    const root = copy();
    plant(root, 'util/ping.ts', "import { pong } from './pong.js';\nexport const ping = () => pong();\n");
    plant(root, 'util/pong.ts', "import { ping } from './ping.js';\nexport const pong = (): unknown => ping;\n");
    const r = cruise(root);
    expect(r.code, r.out).not.toBe(0);
    expect(r.out).toMatch(/no-circular: packages\/decom\/src\/util\/(ping|pong)\.ts → /);
    expect(r.out).toContain(at('util/ping.ts'));
    expect(r.out).toContain(at('util/pong.ts'));
    expect(r.out).not.toContain('upward-from');
  });

  it('fail on a module in a folder on no floor, or beside the cli, even one that imports nothing', () => {
    const root = copy();
    plant(root, 'extra/lonely.ts', 'export const lonely = 1;\n');
    plant(root, 'stray.ts', "import { UserError } from './util/errors.js';\nexport const stray = UserError;\n");
    const r = cruise(root);
    expect(r.code, r.out).not.toBe(0);
    expect(r.out).toContain(`on-a-floor: ${at('extra/lonely.ts')}`);
    expect(r.out).toContain(`on-a-floor: ${at('stray.ts')}`);
  });

  it('fail on an import of the sandbox package', () => {
    const root = copy();
    add(root, 'util/run.ts', "import 'decom-sandbox/package.json';");
    const r = cruise(root);
    expect(r.code, r.out).not.toBe(0);
    expect(r.out).toMatch(/no-sandbox: packages\/decom\/src\/util\/run\.ts → \S*(packages\/sandbox\/|decom-sandbox)/);
  });
});

// The lists the docs show, held to the code's own lists, never to a copy kept here:
// - the audit table's columns: docs/audit-outputs.md's "Columns" table and the example's
//   head line (TABLE_COLUMNS), and the legend `--details` prints under the table;
// - the finding kinds: docs/findings.md's two tables (verify's KINDS, AUDIT_KINDS);
// - the exit codes: the README's "Exit codes" table and each command's --help
//   (COMMAND_EXITS, every code of EXIT);
// - the kubeconfig order: every page that states it, and --kubeconfig's help
//   (KUBECONFIG_ORDER; verify's KUBECONFIG_FILES_ORDER).
// Each comparison names what one side has and the other lacks. The --help checks run
// the built CLI (npm run build).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { remark } from 'remark';
import remarkGfm from 'remark-gfm';
import { describe, expect, it } from 'vitest';
import { TABLE_COLUMNS, tableLegend } from '../packages/decom/src/audit/report.js';
import { KUBECONFIG_FILES_ORDER, KUBECONFIG_ORDER, kubeconfigDefault, type KubeconfigPlace } from '../packages/decom/src/cluster/kubeconfig.js';
import { AUDIT_KINDS } from '../packages/decom/src/rules/audit.js';
import { KINDS } from '../packages/decom/src/rules/residue.js';
import { COMMAND_EXITS, EXIT, exitCodesLine } from '../packages/decom/src/util/exit-codes.js';
import { tempDir } from '../packages/decom/test/helpers/temp.js';

const CHECKOUT = join(import.meta.dirname, '..');
const DECOM = join(CHECKOUT, 'packages', 'decom', 'dist', 'cli.js');

/** The little of a markdown tree (remark's mdast) these checks read. */
interface Md {
  type: string;
  value?: string;
  depth?: number;
  lang?: string | null;
  children?: Md[];
  position?: { start: { line: number } };
}

const parse = (text: string): Md => remark().use(remarkGfm).parse(text) as Md;
const pages = new Map<string, Md>();
/** A page of the checkout, parsed once. */
const page = (path: string): Md => pages.get(path) ?? pages.set(path, parse(readFileSync(join(CHECKOUT, path), 'utf8'))).get(path)!;

/** A node's visible text, inline code included without its backticks, a link's text without its target. */
const text = (n: Md): string => rawText(n).replace(/\s+/g, ' ').trim();
const rawText = (n: Md): string => (n.type === 'text' || n.type === 'inlineCode' ? (n.value ?? '') : (n.children ?? []).map(rawText).join(''));

/** The nodes of the section under the heading `title` at `depth`: up to the next heading of that depth or a higher one. */
function section(tree: Md, depth: number, title: string): Md[] | undefined {
  const nodes = tree.children ?? [];
  const start = nodes.findIndex((n) => n.type === 'heading' && n.depth === depth && text(n) === title);
  if (start < 0) return undefined;
  const end = nodes.findIndex((n, i) => i > start && n.type === 'heading' && (n.depth ?? 0) <= depth);
  return nodes.slice(start + 1, end < 0 ? undefined : end);
}

/** A section's first table, as rows of cell texts, the head row first. */
function table(nodes: Md[] | undefined): string[][] {
  const t = nodes?.find((n) => n.type === 'table');
  return (t?.children ?? []).map((row) => (row.children ?? []).map(text));
}

/** Both ways: what the code's list has and the page lacks, and what the page has that the code's list lacks. */
const compare = (code: readonly string[], onPage: readonly string[]) => ({
  missingFromPage: code.filter((x) => !onPage.includes(x)),
  notInCode: onPage.filter((x) => !code.includes(x)),
});

const helps = new Map<string, string>();
/** A built decom's --help for a command (run once), failing with the reason when it cannot run. */
function help(args: string[]): string {
  const known = helps.get(args.join(' '));
  if (known !== undefined) return known;
  if (!existsSync(DECOM)) throw new Error(`${DECOM} is not built: run npm run build`);
  const r = spawnSync(process.execPath, [DECOM, ...args, '--help'], { cwd: CHECKOUT, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  if (r.status !== 0) throw new Error(`decom ${args.join(' ')} --help exited ${r.status}: ${r.stderr}`);
  helps.set(args.join(' '), r.stdout);
  return r.stdout;
}

/** The subcommands a help lists under "Commands:" (commander's layout), `help` left out. */
const helpCommands = (h: string): string[] => {
  const lines = h.split('\n');
  const start = lines.indexOf('Commands:');
  if (start < 0) return [];
  const end = lines.findIndex((l, i) => i > start && /^\S/.test(l));
  return lines.slice(start + 1, end < 0 ? undefined : end).flatMap((l) => /^ {2}(\S+)/.exec(l)?.[1] ?? []).filter((c) => c !== 'help');
};

/** Every command path decom has (`run`, `hosts trust`…): the leaves of its --help's command tree. `sandbox` is the sandbox's own help. */
function commandPaths(prefix: string[] = []): string[] {
  return helpCommands(help(prefix)).flatMap((c) => {
    const path = [...prefix, c];
    const subs = c === 'sandbox' ? [] : helpCommands(help(path));
    return subs.length ? commandPaths(path) : [path.join(' ')];
  });
}

describe('the audit table\'s columns (docs/audit-outputs.md) and the legend --details prints', () => {
  const tree = page('docs/audit-outputs.md');

  it('the "Columns" table lists every column of TABLE_COLUMNS, in its order, with its kind and meaning', () => {
    const rows = table(section(tree, 4, 'Columns'));
    expect(rows[0], 'docs/audit-outputs.md has no "#### Columns" table').toEqual(['column', 'kind', 'counts']);
    const onPage = rows.slice(1).map(([head, kind, meaning]) => `${head} | ${kind} | ${meaning}`);
    const code = TABLE_COLUMNS.map((c) => `${c.head} | ${c.kind} | ${c.meaning}`);
    expect(compare(code, onPage), 'TABLE_COLUMNS against docs/audit-outputs.md "#### Columns"').toEqual({ missingFromPage: [], notInCode: [] });
    expect(onPage, 'in the table\'s order').toEqual(code);
  });

  it("the example table's head line is the table's: HOST and every column", () => {
    const example = section(tree, 3, 'Table')?.find((n) => n.type === 'code');
    expect(example?.value?.split('\n')[0]?.trim().split(/\s+/)).toEqual(['HOST', ...TABLE_COLUMNS.map((c) => c.head)]);
  });

  it('decom audit-report --details prints the legend under the table; without --details, or as JSON, no legend', () => {
    const report = join(tempDir('decom-docs-lists-'), 'shard.json');
    const finding = { kind: 'phantom-pod', subject: 'default/web', detail: 'runs on the node, unknown to the API', evidence: [], target: {} };
    writeFileSync(report, JSON.stringify({ time: '2026-11-28T12:00:00.000Z', hosts: [{ host: 'node1', node: 'node1', reachable: true, findings: [finding] }], cluster: [] }));
    const run = (...args: string[]) => spawnSync(process.execPath, [DECOM, 'audit-report', report, ...args], { encoding: 'utf8' });
    const details = run('--details');
    expect(details.status, details.stderr).toBe(1);
    // The head line, the rows (node1, the cluster's), a blank line, then the legend.
    const lines = details.stdout.split('\n');
    expect(lines[0]?.split(/\s+/)).toEqual(['HOST', ...TABLE_COLUMNS.map((c) => c.head)]);
    expect(lines.slice(3, 4 + TABLE_COLUMNS.length)).toEqual(['', ...tableLegend()]);
    for (const plain of [run(), run('--output', 'json')]) expect(plain.stdout).not.toContain(tableLegend()[0]);
  });

  it('the legend is one line per column: its head, its kind and what it counts', () => {
    expect(tableLegend().map((l) => l.split(/\s+/).slice(0, 2))).toEqual(TABLE_COLUMNS.map((c) => [c.head, `${c.kind}:`]));
    expect(tableLegend().map((l) => l.replace(/^\S+\s+\S+ /, ''))).toEqual(TABLE_COLUMNS.map((c) => c.meaning));
  });
});

describe('the finding kinds (docs/findings.md)', () => {
  const tree = page('docs/findings.md');
  const kindsOf = (title: string) => table(section(tree, 2, title)).slice(1).map((row) => row[0] ?? '');

  it.each([
    ['Residue on a node', 'KINDS (verify and the reset)', KINDS],
    ['Audit findings', 'AUDIT_KINDS', AUDIT_KINDS],
  ] as const)('"## %s" lists exactly the kinds of %s, each once', (title, what, kinds) => {
    const onPage = kindsOf(title);
    expect(onPage.length, `docs/findings.md has no "## ${title}" table`).toBeGreaterThan(0);
    expect(compare(kinds, onPage), `${what} against docs/findings.md "## ${title}"`).toEqual({ missingFromPage: [], notInCode: [] });
    expect(onPage.filter((k, i) => onPage.indexOf(k) !== i), 'listed twice').toEqual([]);
  });
});

describe('the exit codes (COMMAND_EXITS): the README\'s table and each command\'s --help', () => {
  const rows = table(section(page('README.md'), 2, 'Exit codes'));
  const [head = [], ...body] = rows;
  /** The README's columns: `decom CMD` → the column's index. */
  const columns = new Map(head.flatMap((cell, i) => (/^decom (.+)$/.exec(cell) ? [[/^decom (.+)$/.exec(cell)![1]!, i] as const] : [])));
  const codes = Object.values(EXIT).map(String);
  /** A cell that says the command never ends with that code. */
  const none = (cell: string | undefined) => !cell || /^(—|-|–)$/.test(cell);

  it('has a row for every code of EXIT, and a column for every command of COMMAND_EXITS', () => {
    expect(head[0], 'README.md has no "## Exit codes" table').toBe('code');
    expect(compare(codes, body.map((r) => r[0] ?? '')), 'EXIT against the README\'s rows').toEqual({ missingFromPage: [], notInCode: [] });
    expect(compare(Object.keys(COMMAND_EXITS), [...columns.keys()]), 'COMMAND_EXITS against the README\'s columns').toEqual({ missingFromPage: [], notInCode: [] });
  });

  it.each(Object.keys(COMMAND_EXITS))('decom %s: the README gives a meaning to exactly the codes it can end with, each starting with COMMAND_EXITS\' words', (command) => {
    const column = columns.get(command);
    expect(column, `README.md's "Exit codes" table has no "decom ${command}" column`).toBeDefined();
    const meanings = COMMAND_EXITS[command]!;
    const onPage = body.filter((r) => !none(r[column!])).map((r) => r[0] ?? '');
    expect(compare(Object.keys(meanings), onPage), `COMMAND_EXITS.${command} against the README's "decom ${command}" column`).toEqual({ missingFromPage: [], notInCode: [] });
    for (const [code, meaning] of Object.entries(meanings)) {
      expect(body.find((r) => r[0] === code)?.[column!], `README.md, exit code ${code} of decom ${command}`).toMatch(new RegExp(`^${meaning.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    }
  });

  it('every command decom has is in COMMAND_EXITS, and each one\'s --help ends its exit codes with COMMAND_EXITS\' line', () => {
    const commands = commandPaths();
    expect(compare(Object.keys(COMMAND_EXITS), commands), 'COMMAND_EXITS against the commands of decom --help').toEqual({ missingFromPage: [], notInCode: [] });
    // `decom sandbox --help` is the sandbox package's own.
    for (const command of commands.filter((c) => c !== 'sandbox')) {
      expect(help(command.split(' ')).split('\n'), `decom ${command} --help`).toContain(exitCodesLine(command));
    }
  });
});

describe('the kubeconfig order (KUBECONFIG_ORDER): every page that states it, and --kubeconfig\'s help', () => {
  /** Every page: the README and each of docs/. */
  const docPages = ['README.md', ...readdirSync(join(CHECKOUT, 'docs'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
  /** How a page names each place: inline code, but the service account in words. */
  const mention: Record<KubeconfigPlace, (n: Md) => boolean> = {
    '--kubeconfig': (n) => n.type === 'inlineCode' && /^--kubeconfig( <file>)?$/.test(n.value ?? ''),
    "the inventory's decom_kubeconfig": (n) => n.type === 'inlineCode' && n.value === 'decom_kubeconfig',
    $KUBECONFIG: (n) => n.type === 'inlineCode' && n.value === '$KUBECONFIG',
    '~/.kube/config': (n) => n.type === 'inlineCode' && n.value === '~/.kube/config',
    "the pod's service account": (n) => n.type === 'text' && /service account/.test(n.value ?? ''),
  };
  /** The places a paragraph or table cell names, in the order it first names each. */
  const named = (block: Md): KubeconfigPlace[] => {
    const out: KubeconfigPlace[] = [];
    const walk = (n: Md) => {
      // A place with no way to be found on a page is never named there: every statement then lacks it.
      for (const p of KUBECONFIG_ORDER) if (mention[p]?.(n) && !out.includes(p)) out.push(p);
      for (const c of n.children ?? []) walk(c);
    };
    walk(block);
    return out;
  };
  /** A page's statements of the order: each paragraph or table cell naming both $KUBECONFIG and ~/.kube/config. */
  const statements = (path: string) => {
    const found: { line: number; places: KubeconfigPlace[] }[] = [];
    const walk = (n: Md) => {
      if (n.type === 'paragraph' || n.type === 'tableCell') {
        const places = named(n);
        if (places.includes('$KUBECONFIG') && places.includes('~/.kube/config')) found.push({ line: n.position?.start.line ?? 0, places });
        return;
      }
      for (const c of n.children ?? []) walk(c);
    };
    walk(page(path));
    return found;
  };
  /** The order a page states: verify's and ping's pages, the files' order (neither falls back to a pod's token); every other page, the whole order. */
  const orderOf = (path: string) => (['verify.md', 'ping.md'].includes(relative('docs/commands', path)) ? KUBECONFIG_FILES_ORDER : KUBECONFIG_ORDER);

  it('every place of the order can be found on a page', () => {
    expect(KUBECONFIG_ORDER.filter((p) => !mention[p]), 'places this test cannot find on a page: add how a page names each to `mention`').toEqual([]);
  });

  it('is stated on the pages that explain it', () => {
    const stating = docPages.filter((p) => statements(p).length);
    expect(stating).toEqual(expect.arrayContaining(['docs/commands/run.md', 'docs/commands/verify.md', 'docs/commands/audit.md', 'docs/inventory.md']));
  });

  it.each(docPages)('%s names the places in the order the code searches them, all of them (an option\'s own default may leave out --kubeconfig)', (path) => {
    const order = orderOf(path);
    const wrong = statements(path).filter(({ places }) => places.join(', ') !== order.join(', ') && places.join(', ') !== order.slice(1).join(', '));
    expect(wrong.map((s) => `${path}:${s.line}: ${s.places.join(', ')}`), `the order: ${order.join(', ')}`).toEqual([]);
  });

  it.each([
    ['run', KUBECONFIG_ORDER],
    ['audit', KUBECONFIG_ORDER],
    ['verify', KUBECONFIG_FILES_ORDER],
    ['ping', KUBECONFIG_FILES_ORDER],
  ] as const)("decom %s --help gives --kubeconfig's default in the code's order", (command, order) => {
    const h = help([command]).replace(/\s+/g, ' ');
    expect(h).toContain(`(${kubeconfigDefault(order)})`);
  });
});

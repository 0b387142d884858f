// Each command's reference page lists exactly the long options its --help prints: for every
// decom command, the `## Options` section of docs/commands/<command>.md; for each subcommand
// of `decom hosts` and of `decom sandbox`, the `### Options` of its `## GROUP SUBCOMMAND` section. Both ways:
// an option the help has and the page lacks, and one the page names that the help does
// not have, are each named. Runs the built CLIs (npm run build).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const CHECKOUT = join(import.meta.dirname, '..');
const DECOM = join(CHECKOUT, 'packages', 'decom', 'dist', 'cli.js');
const SANDBOX = join(CHECKOUT, 'packages', 'sandbox', 'dist', 'bin.js');
const COMMANDS = ['run', 'verify', 'audit', 'audit-report', 'journal', 'ping', 'hosts', 'sandbox'] as const;
/** decom's commands that group subcommands: each subcommand's options on its `## GROUP SUB` section's `### Options`. */
const GROUPS = ['hosts'] as const;

/** A built CLI's --help (commander's layout), failing with the reason when it cannot run. */
function help(bin: string, args: string[]): string {
  if (!existsSync(bin)) throw new Error(`${bin} is not built: run npm run build`);
  const r = spawnSync(process.execPath, [bin, ...args, '--help'], { cwd: CHECKOUT, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} --help exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** The lines of a help's section ("Options:", "Commands:"), up to the next section or the end. */
function helpSection(text: string, title: string): string[] {
  const lines = text.split('\n');
  const start = lines.indexOf(`${title}:`);
  if (start < 0) return [];
  const end = lines.findIndex((l, i) => i > start && /^\S/.test(l));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The long options of a help's Options section: from each option's term (at column 2), not from the descriptions. */
function helpOptions(text: string): string[] {
  const terms = helpSection(text, 'Options').flatMap((l) => /^ {2}(-\S.*?)(?: {2,}|$)/.exec(l)?.[1] ?? []);
  return [...new Set(terms.flatMap((t) => t.match(/--[\w-]+/g) ?? []))].sort();
}

/** A page's lines outside fenced code blocks (a `# comment` in a shell block is no heading), with their headings' levels. */
function mdLines(text: string): { text: string; level: number }[] {
  let fence: string | undefined;
  return text.split('\n').map((line) => {
    const f = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (f && (fence === undefined || (f[0] === fence[0] && f.length >= fence.length))) {
      fence = fence === undefined ? f : undefined;
      return { text: line, level: 0 };
    }
    const h = fence === undefined ? /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line) : null;
    return { text: h ? h[2]! : line, level: h ? h[1]!.length : 0 };
  });
}

/** The body of the section headed `heading` at `level`: up to the next heading of the same or a higher level. */
function mdSection(lines: { text: string; level: number }[], level: number, heading: string) {
  const start = lines.findIndex((l) => l.level === level && l.text === heading);
  if (start < 0) return undefined;
  const end = lines.findIndex((l, i) => i > start && l.level > 0 && l.level <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The long options named in backticks in a section. */
function pageOptions(section: { text: string }[]): string[] {
  const spans = section.flatMap((l) => [...l.text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
  return [...new Set(spans.flatMap((s) => s.match(/--[\w-]+/g) ?? []))].sort();
}

/** Both ways: what the help has and the page lacks, and what the page names that the help lacks. */
function compare(fromHelp: string[], onPage: string[]) {
  return { missingFromPage: fromHelp.filter((o) => !onPage.includes(o)), notInHelp: onPage.filter((o) => !fromHelp.includes(o)) };
}

const page = (command: string) => mdLines(readFileSync(join(CHECKOUT, 'docs', 'commands', `${command}.md`), 'utf8'));

describe('the parsers', () => {
  it('read the options of a help and of a page, and sections end at the next heading of their level or higher', () => {
    const text = 'Usage: x\n\nOptions:\n  -V, --version      output the version\n  --no-cache         from nothing; see\n                     --not-an-option\n  -h, --help         display help\n\nCommands:\n  up [options]   boot\n';
    expect(helpOptions(text)).toEqual(['--help', '--no-cache', '--version']);
    const md = mdLines('# T\n## Options\n- `--a <n>`: x\n```sh\n# not a heading\n```\n### Sub\n- `--b`\n## Next\n- `--c`\n');
    expect(pageOptions(mdSection(md, 2, 'Options') ?? [])).toEqual(['--a', '--b']);
    expect(pageOptions(mdSection(md, 3, 'Sub') ?? [])).toEqual(['--b']);
    expect(mdSection(md, 2, 'Missing')).toBeUndefined();
  });
});

describe.each(COMMANDS)('docs/commands/%s.md', (command) => {
  it('has a ## Options section listing exactly the long options of --help', () => {
    const options = mdSection(page(command), 2, 'Options');
    expect(options, `docs/commands/${command}.md has no "## Options" section`).toBeDefined();
    const fromHelp = helpOptions(help(DECOM, [command]));
    expect(fromHelp.length, `decom ${command} --help lists no option`).toBeGreaterThan(0);
    expect(compare(fromHelp, pageOptions(options ?? [])), `decom ${command} --help against docs/commands/${command}.md "## Options"`).toEqual({ missingFromPage: [], notInHelp: [] });
  });
});

describe.each(GROUPS)('docs/commands/%s.md, per subcommand', (group) => {
  const subcommands = helpSection(help(DECOM, [group]), 'Commands')
    .flatMap((l) => /^ {2}(\S+)/.exec(l)?.[1] ?? [])
    .filter((c) => c !== 'help');

  it.each(subcommands)(`## ${group} %s has a ### Options listing exactly the long options of its --help`, (sub) => {
    const section = mdSection(page(group), 2, `${group} ${sub}`);
    expect(section, `docs/commands/${group}.md has no "## ${group} ${sub}" section`).toBeDefined();
    const options = mdSection(section ?? [], 3, 'Options');
    expect(options, `docs/commands/${group}.md "## ${group} ${sub}" has no "### Options"`).toBeDefined();
    expect(compare(helpOptions(help(DECOM, [group, sub])), pageOptions(options ?? [])), `decom ${group} ${sub} --help against docs/commands/${group}.md "## ${group} ${sub}" / "### Options"`).toEqual({ missingFromPage: [], notInHelp: [] });
  });
});

describe('docs/commands/sandbox.md, per subcommand', () => {
  const subcommands = helpSection(help(SANDBOX, []), 'Commands')
    .flatMap((l) => /^ {2}(\S+)/.exec(l)?.[1] ?? [])
    .filter((c) => c !== 'help');

  it('the sandbox has subcommands to document', () => {
    expect(subcommands).toEqual(expect.arrayContaining(['up', 'down', 'status']));
  });

  it.each(subcommands)('## sandbox %s has a ### Options listing exactly the long options of its --help', (sub) => {
    const section = mdSection(page('sandbox'), 2, `sandbox ${sub}`);
    expect(section, `docs/commands/sandbox.md has no "## sandbox ${sub}" section`).toBeDefined();
    const options = mdSection(section ?? [], 3, 'Options');
    expect(options, `docs/commands/sandbox.md "## sandbox ${sub}" has no "### Options"`).toBeDefined();
    expect(compare(helpOptions(help(SANDBOX, [sub])), pageOptions(options ?? [])), `decom-sandbox ${sub} --help against docs/commands/sandbox.md "## sandbox ${sub}" / "### Options"`).toEqual({ missingFromPage: [], notInHelp: [] });
  });
});

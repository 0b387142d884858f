/**
 * How decom's command lines (decom's, and the sandbox's through `decom/command-line`)
 * speak: every usage error as one line on stderr, `PROGRAM: …`, exit 2; no boolean or
 * repeatable flag's help ending in "(default: false)" or "(default: [])"; each
 * command's help ending with its examples and the path of its page.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Help } from 'commander';
import { EXIT } from './exit-codes.js';

/** What this module needs of a commander command (commander's and extra-typings' alike). */
interface CommandLike {
  name(): string;
  parent: CommandLike | null;
  readonly commands: readonly CommandLike[];
  configureOutput(c: { outputError?: (message: string, write: (s: string) => void) => void }): unknown;
  configureHelp(c: Partial<Help>): unknown;
  exitOverride(fn: (err: { exitCode: number }) => never | void): unknown;
}

/** A command's full name, as typed: `decom verify`, `decom hosts trust`. */
export const commandPath = (cmd: CommandLike): string => (cmd.parent ? `${commandPath(cmd.parent)} ${cmd.name()}` : cmd.name());

/**
 * commander's usage errors ("error: unknown option '-x'", a suggestion on the next
 * line) become one line, `PREFIX: …` (the program's name unless given) saying where
 * help is, and exit 2. Applied to `program` and every command under it: call it once
 * all are defined.
 */
export function oneLineUsageErrors(program: CommandLike, prefix = program.name()): void {
  const apply = (cmd: CommandLike) => {
    cmd.configureOutput({
      outputError: (message, write) => {
        const text = message.replace(/^error: /, '').split('\n').map((l) => l.trim()).filter(Boolean).join(' ');
        write(`${prefix}: ${text} (see ${commandPath(cmd)} --help)\n`);
      },
    });
    cmd.configureHelp({
      // A boolean flag is off unless given, a repeatable one empty: "(default: false)" or "(default: [])" says nothing.
      optionDescription(option) {
        const empty = Array.isArray(option.defaultValue) && option.defaultValue.length === 0;
        const plain = (option.isBoolean() && option.defaultValue === false) || empty;
        return plain ? option.description : Help.prototype.optionDescription.call(this, option);
      },
      // The command list shows each command's usage as its own help does (INVENTORY TARGET...).
      subcommandTerm: (sub) => `${sub.name()} ${sub.usage()}`.trimEnd(),
    });
    // commander's own usage errors (unknown flag, bad choice, missing argument) are input errors.
    cmd.exitOverride((err) => process.exit(err.exitCode === 0 ? EXIT.clean : EXIT.input));
    for (const sub of cmd.commands) apply(sub);
  };
  apply(program);
}

/**
 * Where a command's page is: in the installed package (`docs/` beside `dist/`), else in
 * the checkout this package is built in; undefined when neither holds it.
 */
export function pagePath(packageDir: string, page: string): string | undefined {
  for (const docs of [join(packageDir, 'docs'), join(packageDir, '..', '..', 'docs')]) {
    const file = join(docs, page);
    if (existsSync(file)) return file;
  }
  return undefined;
}

/** The end of a command's --help: its exit codes, two or three examples, and its page. */
export function helpFooter(c: { exitCodes: string; examples: readonly string[]; page: string | undefined }): string {
  const lines = ['', c.exitCodes, '', 'Examples:', ...c.examples.map((e) => `  ${e}`)];
  if (c.page) lines.push('', `More: ${c.page}`);
  return lines.join('\n');
}

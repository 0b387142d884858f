/**
 * Credentials kept out of everything decom writes or prints: the value of a credential
 * flag in a command line is replaced by the inventory's REDACTED marker where command
 * lines enter decom (parseProcs), so no finding, evidence, report, journal or error can
 * carry one. The program and the flag's name stay; no reader needs a credential's value.
 */
import { REDACTED } from '../inventory/types.js';

/**
 * A credential flag's name, matched whole: --token, --password, --secret,
 * --client-key-data, and any name ending in -token, -password or -secret (so
 * --bootstrap-token). One dash or two: Go programs take both. A file's path is not a
 * secret: --token-file and --key-file do not match.
 */
const FLAG = String.raw`--?(?:[\w.-]*-)?(?:token|password|secret)|--?client-key-data`;
/** The whole argument is the flag: its value is the next argument. */
const ALONE = new RegExp(`^(?:${FLAG})$`, 'i');
/** The whole argument is the flag and its value: `--token=V` (V as long as the argument, spaces and all). */
const JOINED = new RegExp(`^(${FLAG})=.`, 'is');
/**
 * The flag among words of one argument: a title rewritten in place (setproctitle: argv
 * as one string) or a shell's `-c` script. Its value is the word after `=` or the space.
 */
const WORDS = new RegExp(`(^|\\s)(${FLAG})(=|\\s+)\\S+`, 'gi');

/** A process's argv with the value of each credential flag replaced by REDACTED. */
export function redactArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const joined = JOINED.exec(a);
    if (joined) out.push(`${joined[1]}=${REDACTED}`);
    else if (ALONE.test(a) && i + 1 < argv.length) {
      // Go's flag package takes the next argument as the value, whatever it starts with.
      out.push(a, REDACTED);
      i++;
    } else out.push(a.replace(WORDS, `$1$2$3${REDACTED}`));
  }
  return out;
}

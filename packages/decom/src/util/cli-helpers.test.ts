// The commands' shared pieces, below them all (src/util): the one confirmation prompt,
// the one reading of numbers on the command line, the one table of exit codes.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { confirm } from './prompt.js';
import { count, countOrPercent, parseWhole, percent, seconds, wholeNumber } from './flags.js';
import { EXIT, foldExit } from './exit-codes.js';
import { UserError } from './errors.js';

/** What a call throws, as [exit code, message]; undefined when it does not. */
const thrown = async (f: () => unknown): Promise<[number, string] | undefined> => {
  try {
    await f();
    return undefined;
  } catch (e) {
    if (!(e instanceof UserError)) throw e;
    return [e.exitCode, e.message];
  }
};

describe('confirm: typed on a terminal, refused without one unless --yes', () => {
  /** A terminal that answers `answer`, and what was asked on it. */
  const terminal = (answer: string, tty = true) => {
    const input = Object.assign(new PassThrough(), { isTTY: tty });
    const output = new PassThrough();
    let asked = '';
    output.on('data', (b: Buffer) => {
      asked += b.toString();
      if (asked.endsWith(': ')) input.write(`${answer}\n`);
    });
    return { input, output, asked: () => asked };
  };
  const ask = { action: 'reset node1 node2', question: 'This resets node1, node2.\nType the host names to go on (node1 node2): ', expect: 'node1 node2' };

  it('goes on when the expected words are typed, blanks around and between them aside', async () => {
    const t = terminal('  node1   node2 ');
    expect(await thrown(() => confirm({ ...ask, yes: false, input: t.input, output: t.output }))).toBeUndefined();
    expect(t.asked()).toBe(ask.question);
  });

  it('anything else changes nothing: exit 4', async () => {
    for (const answer of ['node1', 'node2 node1', 'yes', '']) {
      const t = terminal(answer);
      expect(await thrown(() => confirm({ ...ask, yes: false, input: t.input, output: t.output })), answer).toEqual([4, 'not confirmed: nothing was changed']);
    }
  });

  it('no terminal: bad input (exit 2) naming what is refused, unless --yes, which asks nothing', async () => {
    const t = terminal('node1 node2', false);
    expect(await thrown(() => confirm({ ...ask, yes: false, input: t.input, output: t.output }))).toEqual([2, 'refusing to reset node1 node2 without confirmation: no terminal to ask on; pass --yes']);
    expect(await thrown(() => confirm({ ...ask, yes: true, input: t.input, output: t.output }))).toBeUndefined();
    expect(t.asked()).toBe('');
  });
});

describe('flags: a whole number is digits only, each parser naming its flag', () => {
  it('parseWhole: digits, blanks around them ignored; nothing else', () => {
    expect(['0', '7', ' 42 ', '0012'].map(parseWhole)).toEqual([0, 7, 42, 12]);
    for (const v of ['', ' ', '-1', '1.5', '5.0', '1e3', '0x10', '+3', 'three', '3 4']) expect(parseWhole(v), v).toBeUndefined();
  });

  it('count, seconds, percent, countOrPercent and the sandbox\'s wholeNumber, with their messages', async () => {
    expect([count('--forks', '3', 1), count('--forks', undefined, 1)]).toEqual([3, undefined]);
    expect(await thrown(() => count('--forks', '0', 1))).toEqual([2, '--forks "0": expected a whole number of at least 1']);
    expect(await thrown(() => count('--max', '1e2', 0))).toEqual([2, '--max "1e2": expected a whole number of at least 0']);
    expect(seconds('--grace-period', '0')).toBe(0);
    expect(await thrown(() => seconds('--grace-period', '30s'))).toEqual([2, '--grace-period "30s": expected whole seconds, e.g. 30']);
    expect([percent('--max-fail-percent', '0'), percent('--max-fail-percent', '100'), percent('--max-fail-percent', undefined)]).toEqual([0, 100, undefined]);
    expect(await thrown(() => percent('--max-fail-percent', '101'))).toEqual([2, '--max-fail-percent "101": expected a whole percentage from 0 to 100']);
    expect([countOrPercent('--serial', '2', 10), countOrPercent('--serial', '25%', 10), countOrPercent('--serial', '1%', 10), countOrPercent('--serial', undefined, 10)]).toEqual([2, 2, 1, undefined]);
    expect(await thrown(() => countOrPercent('--serial', '150%', 10))).toEqual([2, '--serial 150%: a percentage from 1% to 100%']);
    expect(await thrown(() => countOrPercent('--serial', '0', 10))).toEqual([2, '--serial "0": expected a whole number of at least 1']);
    expect(wholeNumber('--nodes', '3')).toBe(3);
    expect(await thrown(() => wholeNumber('--services', '-5'))).toEqual([2, '--services takes a whole number, got "-5"']);
  });
});

describe('exit codes: named once, folded by one rule', () => {
  it('the codes the help texts and the README document', () => {
    expect(EXIT).toEqual({ clean: 0, residue: 1, input: 2, unreachable: 3, refused: 4 });
  });

  it('3 wins over 4, 4 over 1, 1 over 0; nothing is 0', () => {
    expect(foldExit([])).toBe(0);
    expect(foldExit([0, 0])).toBe(0);
    expect(foldExit([0, 1, 0])).toBe(1);
    expect(foldExit([1, 4, 1])).toBe(4);
    expect(foldExit([4, 3, 1])).toBe(3);
    expect(foldExit([3, 2])).toBe(2);
  });
});

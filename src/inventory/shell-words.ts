/**
 * POSIX shell word splitting, as Python's shlex.split (which Ansible uses for INI
 * host lines and for ansible_ssh_common_args): whitespace separates words, '...' is
 * literal, "..." honours \\ \" \$ \`, and a backslash outside quotes escapes the next
 * character. Nothing is expanded or executed: no $VAR, no globs, no ~.
 */

export interface Word {
  text: string;
  /** 1-based column of the word's first character (a quote, if it starts with one). */
  col: number;
  /** 1-based column of the first character that is part of the text (after an opening quote). */
  textCol: number;
}

/** Bad quoting; `col` is 1-based in the split text. */
export class ShellSyntaxError extends Error {
  constructor(
    message: string,
    readonly col: number,
  ) {
    super(message);
  }
}

/** With `comments`, an unquoted # ends the line (shlex's comments=True). */
export function splitShellWords(line: string, opts: { comments?: boolean } = {}): Word[] {
  const words: Word[] = [];
  let i = 0;
  let commentStarted = false;
  while (i < line.length && !commentStarted) {
    while (i < line.length && /\s/.test(line[i]!)) i++;
    if (i >= line.length) break;
    if (opts.comments && line[i] === '#') break;
    const start = i;
    let text = '';
    let textCol = 0;
    const take = (s: string, at: number) => {
      if (!textCol) textCol = at + 1;
      text += s;
    };
    while (i < line.length && !/\s/.test(line[i]!)) {
      const c = line[i]!;
      if (opts.comments && c === '#') {
        // As shlex: an unquoted # ends the line even inside a word (a=b#c is a=b).
        commentStarted = true;
        break;
      }
      if (c === "'") {
        const close = line.indexOf("'", i + 1);
        if (close < 0) throw new ShellSyntaxError(`unterminated ' quote`, i + 1);
        if (close > i + 1) take(line.slice(i + 1, close), i + 1);
        else if (!textCol) textCol = i + 2;
        i = close + 1;
      } else if (c === '"') {
        const open = i;
        i++;
        if (!textCol) textCol = i + 1;
        while (i < line.length && line[i] !== '"') {
          if (line[i] === '\\' && i + 1 < line.length && '\\"$`\n'.includes(line[i + 1]!)) {
            take(line[i + 1]!, i + 1);
            i += 2;
          } else {
            take(line[i]!, i);
            i++;
          }
        }
        if (i >= line.length) throw new ShellSyntaxError(`unterminated " quote`, open + 1);
        i++;
      } else if (c === '\\') {
        if (i + 1 >= line.length) throw new ShellSyntaxError('ends with a lone backslash', i + 1);
        take(line[i + 1]!, i + 1);
        i += 2;
      } else {
        take(c, i);
        i++;
      }
    }
    if (i > start) words.push({ text, col: start + 1, textCol: textCol || start + 1 });
  }
  return words;
}

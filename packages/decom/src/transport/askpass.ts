/**
 * Secrets for the system's ssh, the one way that leaves no trace: ssh runs SSH_ASKPASS
 * (SSH_ASKPASS_REQUIRE=force) with its prompt, and the helper decom wrote asks decom over
 * a Unix socket in its private folder. The secret is never in an argument, an environment
 * variable or a file; `sshpass` is not used.
 */
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import { shQuote } from '../util/run.js';

/** The helper (CommonJS, run by this process's node): the prompt to decom's socket, the answer to ssh; no answer is exit 1, which ssh takes as "cancelled". */
const HELPER = `'use strict';
const sock = require('node:net').connect(process.env.DECOM_ASKPASS_SOCKET);
const got = [];
sock.on('data', (b) => got.push(b));
sock.on('end', () => {
  const answer = Buffer.concat(got);
  if (answer.length === 0) process.exit(1);
  process.stdout.write(Buffer.concat([answer, Buffer.from('\\n')]));
});
sock.on('error', () => process.exit(1));
sock.end(process.argv[2] || '');
`;

/**
 * What to answer, and to whom: the login password to a password prompt that names the node's
 * login (ssh's `user@host's password:`, `(user@host) Password:`), never a jump host's or a
 * ProxyCommand's own ssh; the passphrase to `Enter passphrase for key 'FILE'` for decom's
 * key files only.
 */
export interface AskpassAnswers {
  password?: string;
  passphrase?: string;
  /** `user@host` as ssh names the node in its prompts (the HostKeyAlias when there is one). */
  login: string;
  keyFiles: string[];
}

/** The answer `prompt` gets, if any. */
export function answerTo(prompt: string, a: AskpassAnswers): string | undefined {
  const key = /^Enter passphrase for key '(.*)': ?$/.exec(prompt.trim());
  if (key) return a.keyFiles.includes(key[1]!) ? a.passphrase : undefined;
  const named = prompt.toLowerCase().includes(`${a.login.toLowerCase()}'s password`) || prompt.toLowerCase().startsWith(`(${a.login.toLowerCase()}) `);
  return named && /password/i.test(prompt) ? a.password : undefined;
}

/** Each prompt is answered at most this often per connection: a wrong password is not retried forever. */
const MAX_ANSWERS = 3;

/** The helper script in `dir`, written once per folder: a sh wrapper that runs the CommonJS file with this node. */
function helperIn(dir: string): string {
  const script = join(dir, 'askpass');
  if (!existsSync(script)) {
    writeFileSync(join(dir, 'askpass.cjs'), HELPER, { mode: 0o600 });
    writeFileSync(script, `#!/bin/sh\nexec ${shQuote(process.execPath)} ${shQuote(join(dir, 'askpass.cjs'))} "$@"\n`, { mode: 0o700 });
    chmodSync(script, 0o700);
  }
  return script;
}

/**
 * Serves one connection's prompts on `socketPath` (in the private folder) and returns the
 * environment ssh needs to ask it. Any other prompt (a host key question, an OTP, a PIN,
 * another host's password) gets no answer.
 */
export async function serveAskpass(socketPath: string, answers: AskpassAnswers): Promise<{ env: Record<string, string>; close: () => void }> {
  let given = 0;
  const server: Server = createServer((conn) => {
    let prompt = '';
    conn.on('data', (b: Buffer) => (prompt += b.toString()));
    conn.on('error', () => {});
    conn.on('end', () => {
      const answer = answerTo(prompt, answers);
      if (answer === undefined || given >= MAX_ANSWERS) return conn.end();
      given += 1;
      conn.end(answer);
    });
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(socketPath, () => resolve()));
  return {
    env: { SSH_ASKPASS: helperIn(dirname(socketPath)), SSH_ASKPASS_REQUIRE: 'force', DECOM_ASKPASS_SOCKET: socketPath },
    close: () => void server.close(),
  };
}

/** sudo as both SSH transports use it: whether an exec needs sudo and a password line, and the sudo socat bridge to a node's Unix socket. */
import type { Readable } from 'node:stream';
import { SUDO_OK_MARKER, becomeArgv, lastLine, shellCommand, sudoProbeArgv, type Become, type RawResult } from './command.js';
import { TransportError, type SshTarget } from './types.js';

/**
 * Decides, per exec, whether it goes through sudo and whether sudo gets the password
 * line. With NOPASSWD, sudo -S would not read the password line and the script would
 * get it on its stdin: sudo is asked once per connection whether it wants one (`probe`
 * runs a command on the node).
 */
/** How long the once-per-connection question to sudo may take. */
export const SUDO_PROBE_TIMEOUT_SEC = 30;

export class SudoGate {
  private needsPassword?: Promise<boolean>;

  constructor(
    private readonly target: Pick<SshTarget, 'name' | 'user' | 'becomeUser' | 'becomePassword'>,
    private readonly probe: (command: string) => Promise<RawResult>,
  ) {}

  /** sudo is skipped when the login user already is the become user. */
  async become(wanted: boolean): Promise<Become | undefined> {
    const { user, becomeUser, becomePassword } = this.target;
    if (!wanted || user === becomeUser) return undefined;
    // sudo -S reads one line: a newline in the password would leave the rest in the script's input.
    if (becomePassword?.includes('\n')) throw new TransportError(this.target.name, 'sudo', 'ansible_become_password holds a line break, which sudo -S cannot take');
    if (becomePassword === undefined) return { user: becomeUser, withPassword: false };
    this.needsPassword ??= this.probe(shellCommand(sudoProbeArgv(becomeUser)))
      .then((r) => r.code !== 0)
      .catch((e: unknown) => {
        this.needsPassword = undefined;
        throw e;
      });
    return { user: becomeUser, withPassword: await this.needsPassword };
  }
}

/** The command that bridges a session to a Unix socket on the node as `become.user`: sudo, its marker on stderr, then socat. */
export function sudoBridgeCommand(become: Become, address: string): string {
  return shellCommand([...becomeArgv(become), 'socat', '-', address]);
}

/**
 * Resolves once sudo has let the bridge in (its marker on `stderr`): before that, nothing
 * but the password line may be written to the stream. Rejects with sudo's last words
 * when the session ends first (`onEnd` registers for that).
 */
export function sudoLetIn(host: string, what: string, stderr: Readable, onEnd: (ended: () => void) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let said = '';
    let done = false;
    const onErr = (b: Buffer) => {
      said += b.toString();
      if (done || !said.includes(SUDO_OK_MARKER)) return;
      done = true;
      stderr.off('data', onErr);
      resolve();
    };
    stderr.on('data', onErr);
    onEnd(() => {
      if (done) return;
      done = true;
      reject(new TransportError(host, 'sudo', `cannot open ${what} through sudo: ${lastLine(said) || 'the session ended'}`));
    });
  });
}

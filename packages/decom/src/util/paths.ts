/** Paths as a user writes them: `~` expanded to the home directory. */
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * `~` and `~/x` as the shell would expand them for the current user. `~other/x` is
 * left as written (it then fails as a missing file, naming the path).
 */
export function expandHome(path: string): string {
  if (path === '~') return homedir();
  if (path.startsWith('~/')) return join(homedir(), path.slice(2));
  return path;
}

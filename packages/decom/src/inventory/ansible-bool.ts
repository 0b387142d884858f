/** Ansible's booleans in an inventory: true/false, yes/no, on/off, 1/0, y/n, t/f, any case (an INI inventory's values are strings). */

const TRUE_WORDS = ['y', 'yes', 'on', '1', 'true', 't'];
const FALSE_WORDS = ['n', 'no', 'off', '0', 'false', 'f'];

/** The boolean a variable's value says, or undefined when it says none. */
export function ansibleBool(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const word = String(value).trim().toLowerCase();
  return TRUE_WORDS.includes(word) ? true : FALSE_WORDS.includes(word) ? false : undefined;
}

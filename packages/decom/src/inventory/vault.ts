/**
 * ansible-vault as Ansible reads it: the envelope (format 1.1, and 1.2 with a vault ID),
 * AES256 decrypted with Node's crypto as the format is documented (PBKDF2-SHA256, 10,000
 * rounds, 80 bytes: the AES key, the HMAC key, the counter; HMAC-SHA256 checked first),
 * and the vault passwords from where Ansible takes them.
 */
import { spawnSync } from 'node:child_process';
import { createDecipheriv, createHmac, pbkdf2Sync, timingSafeEqual } from 'node:crypto';
import { accessSync, constants, readFileSync } from 'node:fs';
import { inputError } from '../util/errors.js';
import { askSecret } from '../util/prompt.js';
import { expandHome } from '../util/paths.js';
import { commaList } from './ansible-cfg.js';
import { readTextFile } from './text-file.js';
import type { Located } from './where.js';

/** One vault password, by its vault ID label ("default" when none was given). */
export interface VaultSecret {
  label: string;
  password: Buffer;
  /** Where it came from, for messages: a file, a script, the prompt. Never the password. */
  source: string;
}

export const VAULT_HEADER = '$ANSIBLE_VAULT;';

/** Is this text a vault envelope (a whole file, or an inline !vault value)? */
export const isVaulted = (text: string): boolean => text.trimStart().startsWith(VAULT_HEADER);

/** A vault text that cannot be opened; `message` never holds a password or plaintext. */
export class VaultError extends Error {}

/**
 * The plaintext of a vault envelope. Secrets whose label is the envelope's vault ID are
 * tried first, then the others, as Ansible does when no ID is forced.
 */
export function decryptVault(text: string, secrets: VaultSecret[]): string {
  const lines = text.trim().split(/\r?\n/).map((l) => l.trim());
  const header = lines[0]!.split(';');
  const [, version, cipher, label] = header;
  if ((version !== '1.1' && version !== '1.2') || cipher !== 'AES256') {
    throw new VaultError(`an ansible-vault format decom does not read: ${lines[0]!.slice(0, 40)}`);
  }
  if (secrets.length === 0) throw new VaultError('is encrypted with ansible-vault and no vault password was given (--vault-password-file, --vault-id, --ask-vault-pass)');
  const body = Buffer.from(lines.slice(1).join(''), 'hex').toString('latin1').split('\n');
  if (body.length !== 3 || !body.every((h) => /^[0-9a-f]+$/i.test(h))) throw new VaultError('is not a well-formed ansible-vault text (its body is not salt, HMAC and ciphertext)');
  const [salt, mac, data] = body.map((h) => Buffer.from(h, 'hex')) as [Buffer, Buffer, Buffer];
  const ordered = [...secrets.filter((s) => s.label === label), ...secrets.filter((s) => s.label !== label)];
  for (const secret of ordered) {
    const derived = pbkdf2Sync(secret.password, salt, 10_000, 80, 'sha256');
    const check = createHmac('sha256', derived.subarray(32, 64)).update(data).digest();
    if (check.length !== mac.length || !timingSafeEqual(check, mac)) continue;
    const decipher = createDecipheriv('aes-256-ctr', derived.subarray(0, 32), derived.subarray(64, 80));
    const padded = Buffer.concat([decipher.update(data), decipher.final()]);
    // PKCS#7, as Ansible pads before encrypting.
    const pad = padded[padded.length - 1] ?? 0;
    if (pad < 1 || pad > 16 || pad > padded.length) throw new VaultError('decrypted, but its padding is not PKCS#7: not an ansible-vault text');
    return padded.subarray(0, padded.length - pad).toString('utf8');
  }
  const ids = [...new Set(secrets.map((s) => s.label))].join(', ');
  throw new VaultError(`cannot be decrypted with the vault password${secrets.length === 1 ? '' : 's'} given (vault ID${secrets.length === 1 ? '' : 's'} ${ids}${label ? `; it was encrypted for ${label}` : ''})`);
}

/** Where the vault passwords come from: the flags, then the environment and ansible.cfg, as Ansible reads them. */
export interface VaultSources {
  /** --vault-password-file FILE, in order. */
  passwordFiles?: string[];
  /** --vault-id [label@]source, in order; source a file, an executable, or "prompt". */
  vaultIds?: string[];
  /** --ask-vault-pass. */
  askVaultPass?: boolean;
  /** ansible.cfg's [defaults] vault_password_file, vault_identity_list (or their ANSIBLE_* variables). */
  cfgPasswordFile?: Located;
  cfgIdentityList?: Located;
}

/** The vault flags of a command (--vault-password-file, --vault-id, --ask-vault-pass) as VaultSources. */
export const vaultSourcesOf = (f: { vaultPasswordFile?: string[]; vaultId?: string[]; askVaultPass?: boolean }): VaultSources => ({
  passwordFiles: f.vaultPasswordFile ?? [],
  vaultIds: f.vaultId ?? [],
  askVaultPass: f.askVaultPass ?? false,
});

/**
 * The vault passwords, read now (a script run once, a prompt asked once). With none of
 * the flags, ANSIBLE_VAULT_PASSWORD_FILE / vault_password_file and the identity list
 * serve, as in Ansible.
 */
export async function vaultSecrets(s: VaultSources): Promise<VaultSecret[]> {
  const ids = [
    ...(s.vaultIds ?? []),
    ...(s.passwordFiles ?? []),
    ...(s.askVaultPass ? ['prompt'] : []),
    ...(commaList(s.cfgIdentityList) ?? []),
    ...(s.cfgPasswordFile && typeof s.cfgPasswordFile.value === 'string' && s.cfgPasswordFile.value ? [s.cfgPasswordFile.value] : []),
  ];
  const secrets: VaultSecret[] = [];
  for (const id of ids) secrets.push(await readSecret(id));
  return secrets;
}

/** `[label@]source`: "prompt", an executable (its stdout), or a file (its text, stripped), as Ansible's vault secrets. */
async function readSecret(id: string): Promise<VaultSecret> {
  const at = id.indexOf('@');
  // A path may hold an @; a label never holds a /.
  const [label, source] = at > 0 && !id.slice(0, at).includes('/') ? [id.slice(0, at), id.slice(at + 1)] : ['default', id];
  if (source === 'prompt' || source === 'prompt_ask_vault_pass') {
    const password = await askSecret(`Vault password${label === 'default' ? '' : ` (${label})`}: `, '--ask-vault-pass');
    return { label, password: Buffer.from(password), source: 'the prompt' };
  }
  const file = expandHome(source);
  let executable = false;
  try {
    accessSync(file, constants.X_OK);
    executable = true;
  } catch {
    // a plain file
  }
  if (executable) {
    // A vault-id client script (name ending in -client) is asked for its label, as Ansible asks it.
    const args = /-client(\.[^./]+)?$/.test(file) ? ['--vault-id', label] : [];
    const r = spawnSync(file, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    if (r.error || r.status !== 0) {
      throw inputError(`vault password script ${file} ${r.error ? `could not run: ${r.error.message}` : `exited ${r.status}`}`);
    }
    return { label, password: Buffer.from(r.stdout.toString().replace(/[\r\n]+$/, '')), source: file };
  }
  let text: Buffer;
  try {
    text = readFileSync(file);
  } catch (e) {
    throw inputError(`vault password file ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found' : ((e as NodeJS.ErrnoException).code ?? String(e))}`);
  }
  const password = text.toString().trim();
  if (!password) throw inputError(`vault password file ${file} is empty`);
  return { label, password: Buffer.from(password), source: file };
}

/** A vars file's text (group_vars, host_vars, -e @FILE), opened with the vault passwords when it is encrypted whole, as Ansible opens it. */
export async function readVarsText(file: string, what: string, vault: VaultSecret[]): Promise<string> {
  const text = await readTextFile(file, what);
  if (!isVaulted(text)) return text;
  try {
    return decryptVault(text, vault);
  } catch (e) {
    if (e instanceof VaultError) throw inputError(`${file}: ${e.message}`);
    throw e;
  }
}

/** decom's own inventory format (`apiVersion: decom/v1`): its schema, that schema as JSON Schema, and a file of it read into an Inventory. */
import type { Node } from 'yaml';
import * as z from 'zod';
import { plainVars } from './ansible.js';
import { hostInputs, NO_COMMAND_LINE, type CommandLineLayer } from './command-line-settings.js';
import { buildReach, type ConnectionInputs } from './connection.js';
import type { VaultSecret } from './vault.js';
import { DECOM_API_VERSION, type Host, type Inventory } from './types.js';
import { describeValue, fieldError, type Located } from './where.js';
import { nodeAt, toValue, whereOf, whereOfPath, type YamlFile } from './yaml-source.js';

/**
 * decom's own inventory format, recognised by `apiVersion: decom/v1`:
 *
 *   apiVersion: decom/v1
 *   defaults: {user: root, key: ~/.ssh/id_ed25519, strictHostKeyChecking: yes}
 *   hosts:
 *     node1: {address: 10.0.0.1, groups: [kube_control_plane, etcd], become: true}
 *
 * Self-contained: no group_vars/host_vars. Unknown fields are errors, so a typo
 * (`becom: true`) cannot quietly fall back to a default.
 */
const port = z
  .int({ error: 'expected a port number 1-65535' })
  .min(1, { error: 'expected a port number 1-65535' })
  .max(65535, { error: 'expected a port number 1-65535' });
const nonEmpty = (what: string) => z.string({ error: `expected ${what}` }).min(1, { error: `expected ${what}` });

const connectionShape = {
  user: nonEmpty('a user name').describe('SSH login user (default: the user running decom)').optional(),
  port: port.describe('SSH port (default 22)').optional(),
  key: nonEmpty('a file path').describe('private key file; a leading ~ is your home directory').optional(),
  knownHosts: nonEmpty('a file path').describe('known_hosts file to check host keys against (default ~/.ssh/known_hosts)').optional(),
  strictHostKeyChecking: z
    .enum(['yes', 'accept-new', 'no'], { error: 'expected yes, accept-new or no' })
    .describe('yes: refuse unknown host keys (default); accept-new: record unknown ones, refuse changed ones; no: not honoured, checked as yes with a warning')
    .optional(),
  become: z.boolean({ error: 'expected true or false' }).describe('run commands as root through sudo (default false)').optional(),
  becomeUser: nonEmpty('a user name').describe('user to become (default root)').optional(),
  becomePassword: z.string({ error: 'expected a string' }).describe('sudo password; never printed').optional(),
  proxyJump: z
    .union([z.string(), z.array(z.string())], { error: 'expected [user@]host[:port], or a list of them' })
    .describe('jump hosts in order, as OpenSSH ProxyJump: "a,b" or [a, b]')
    .optional(),
  connectTimeoutSec: z
    .int({ error: 'expected a whole number of seconds from 1' })
    .min(1, { error: 'expected a whole number of seconds from 1' })
    .describe('seconds to wait for the TCP connection (default 10)')
    .optional(),
};

const hostSchema = z.strictObject(
  {
    address: nonEmpty('a host name or address').describe('where to connect (default: the host name)').optional(),
    groups: z
      .array(z.string({ error: 'expected a group name' }).regex(/^\S+$/, { error: 'expected a group name (one word)' }), {
        error: 'expected a list of group names',
      })
      .describe('groups the host belongs to, for targeting')
      .optional(),
    vars: z.record(z.string(), z.unknown(), { error: 'expected a mapping of variable names to values' }).describe('free-form variables').optional(),
    ...connectionShape,
  },
  { error: "expected the host's settings as a mapping, or nothing" },
);

export const decomInventorySchema = z
  .strictObject(
    {
      apiVersion: z.literal(DECOM_API_VERSION, { error: `expected ${DECOM_API_VERSION}` }),
      defaults: z.strictObject(connectionShape, { error: 'expected a mapping of settings' }).describe('settings every host gets unless it sets its own').optional(),
      hosts: z.record(z.string(), hostSchema.nullable(), { error: 'expected a mapping of host names to their settings' }),
    },
    { error: 'expected a mapping' },
  )
  .describe('decom inventory');

export type DecomInventoryFile = z.infer<typeof decomInventorySchema>;

/** The decom/v1 format as JSON Schema, for editors and validation in CI. */
export function decomInventoryJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(decomInventorySchema) as Record<string, unknown>;
}

const KNOWN_FIELDS = {
  top: Object.keys(decomInventorySchema.shape),
  defaults: Object.keys(connectionShape),
  host: Object.keys(hostSchema.shape),
};

type SettingInput = keyof ConnectionInputs;

/** decom field -> SshTarget input. */
const CONNECTION_FIELDS: Record<keyof typeof connectionShape | 'address', SettingInput> = {
  address: 'address',
  user: 'user',
  port: 'port',
  key: 'privateKeyFile',
  knownHosts: 'knownHostsFile',
  strictHostKeyChecking: 'strictHostKeyChecking',
  become: 'become',
  becomeUser: 'becomeUser',
  becomePassword: 'becomePassword',
  proxyJump: 'proxyJump',
  connectTimeoutSec: 'connectTimeoutSec',
};

/** The file read into an Inventory; the command line's settings (`commandLine`) under and over each host's, as in an Ansible inventory. */
export function readDecomInventory(y: YamlFile, defaultUser: () => string, commandLine: CommandLineLayer = NO_COMMAND_LINE, vault: VaultSecret[] = []): Inventory {
  const data = toValue(y, y.doc.contents as Node | null, '(top level)');
  const parsed = decomInventorySchema.safeParse(data);
  if (!parsed.success) throw firstIssueError(y, data, parsed.error.issues);
  const file = parsed.data;

  const hosts = new Map<string, Host>();
  const groups = new Map<string, string[]>([['all', []]]);
  const member = (group: string, host: string) => {
    const list = groups.get(group) ?? [];
    if (!list.includes(host)) list.push(host);
    groups.set(group, list);
  };
  for (const [name, entry] of Object.entries(file.hosts)) {
    const settings = entry ?? {};
    const inputs: ConnectionInputs = {};
    for (const [field, input] of Object.entries(CONNECTION_FIELDS) as [keyof typeof CONNECTION_FIELDS, SettingInput][]) {
      const own = field in settings ? locate(y, ['hosts', name, field], 'host') : undefined;
      const inherited = field !== 'address' && file.defaults && field in file.defaults ? locate(y, ['defaults', field], 'group') : undefined;
      const chosen = own ?? inherited;
      if (chosen) inputs[input] = chosen;
    }
    const nameWhere = whereOfPath(y, ['hosts', name], true);
    const { target, reach } = buildReach(name, nameWhere, hostInputs(inputs, commandLine), defaultUser, {}, undefined, vault);
    const named = [...new Set((settings.groups ?? []).filter((g) => g !== 'all' && g !== 'ungrouped'))];
    const hostGroups = ['all', ...(named.length ? named : ['ungrouped'])];
    for (const g of hostGroups) member(g, name);
    hosts.set(name, { ...target, groups: hostGroups, vars: { ...(settings.vars ?? {}), ...plainVars(commandLine.extraVars) }, reach });
  }
  if (!groups.has('ungrouped')) groups.set('ungrouped', []);
  return { file: y.file, hosts, groups };
}

/** A value of the file with its position, for errors found after validation. */
function locate(y: YamlFile, path: string[], scope: Located['scope']): Located {
  const node = nodeAt(y, path);
  return { value: toValue(y, node.value, path.join('.')), where: whereOf(y, node.value ?? node.key), field: path.join('.'), scope };
}


/** The issue that comes first in the file, as `file:line:col: field: problem`. */
function firstIssueError(y: YamlFile, data: unknown, issues: z.core.$ZodIssue[]) {
  const located = issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') {
      const path = [...issue.path, issue.keys[0]!];
      const known = issue.path.length === 0 ? KNOWN_FIELDS.top : issue.path[0] === 'defaults' ? KNOWN_FIELDS.defaults : KNOWN_FIELDS.host;
      return { where: whereOfPath(y, path, true), field: path.join('.'), problem: `unknown field; expected one of ${known.join(', ')}` };
    }
    const value = valueAt(data, issue.path);
    // Never echo a password, even a wrongly typed one.
    const secret = issue.path[issue.path.length - 1] === 'becomePassword';
    const got = secret ? '' : `, got ${describeValue(value)}`;
    return { where: whereOfPath(y, issue.path), field: issue.path.join('.') || '(top level)', problem: `${issue.message}${got}` };
  });
  located.sort((a, b) => a.where.line - b.where.line || a.where.col - b.where.col);
  const first = located[0]!;
  return fieldError(first.where, first.field, first.problem);
}

function valueAt(data: unknown, path: PropertyKey[]): unknown {
  let value = data;
  for (const step of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[step];
  }
  return value;
}

/**
 * The inventory, for the rest of decom: read one, pick hosts from it, print a host safely.
 *
 * decom's own format's schema (decomInventorySchema, decomInventoryJsonSchema) is
 * exported by decom-format.ts, not here: it needs zod, ~60-90 ms to load, which a
 * command reading an Ansible inventory should not pay.
 */
export { DECOM_API_VERSION, redact, REDACTED, type Host, type Inventory } from './types.js';
export { loadInventory, type LoadOptions } from './load.js';
export { connectionOverridesOf, parseExtraVars, type ConnectionFlags, type ConnectionOverrides, type ReachFlags } from './command-line-settings.js';
export { resolveTargets } from './targets.js';
export { askedPassword, reachHosts, type ReachOptions } from './reach.js';
export { vaultSourcesOf, type VaultSources } from './vault.js';
export { addressesOf, etcdGroupOf, hostOf, nodeNamed, nodeNameOf, type EtcdGroup } from './identity.js';
export type { DecomInventoryFile } from './decom-format.js';

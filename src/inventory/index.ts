export type { Host, Inventory } from './types.js';
export { loadInventory, type LoadOptions } from './load.js';
export { resolveTargets } from './targets.js';
export { redact, REDACTED } from './redact.js';
export { decomInventoryJsonSchema, decomInventorySchema, DECOM_API_VERSION, type DecomInventoryFile } from './decom-format.js';

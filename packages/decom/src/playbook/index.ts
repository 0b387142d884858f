/** The playbook, for the rest of decom: loading and checking one, its JSON Schema, --tags selection and `when:` conditions. */
export { loadPlaybook, parsePlaybook, resolvePlaybook, shippedPlaybooks, PACKAGE_ROOT, type LoadOptions } from './load.js';
export { playbookJsonSchema, DEFAULT_SHELL_TIMEOUT_SEC, PLAYBOOK_API_VERSION } from './schema.js';
export { selectSteps, SPECIAL_TAGS, type TagSelection } from './tags.js';
export type { Playbook, PlaybookStep, StepCatalogue, StepSpec } from './types.js';
export { evalWhen, parseCondition, ConditionSyntaxError, SUPPORTED_CONDITIONS, type Condition, type Literal } from './when.js';

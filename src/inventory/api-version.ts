/** Marks decom's own inventory format (kept apart so detecting it does not load zod). */
export const DECOM_API_VERSION = 'decom/v1';

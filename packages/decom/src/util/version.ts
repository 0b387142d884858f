/** decom's version: what --version prints and what its API requests say they are. */
export const VERSION = '0.1.0';

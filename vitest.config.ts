import { defineConfig } from 'vitest/config';

// Every integration test boots real sandbox nodes on this host: one file at a time,
// generous timeouts (a node boots in about a second, a scenario in a few).
export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});

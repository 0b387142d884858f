/** vitest's configuration for the repository's tests (`npm test`): the two projects below. */
import { defineConfig } from 'vitest/config';

// Two projects, run at the same time:
// - unit: no sandbox node (pure code, recorded fixtures, or a namespace, containerd or
//   sshd of the test's own), files in parallel; beside the sources they test, and the
//   repository's own checks in test/.
// - node: the tests that boot sandbox nodes, grouped by command under packages/*/test/.
//   The sandbox is one per machine: one file at a time, generous timeouts (a node
//   boots in about a second, a scenario in a few).
export default defineConfig({
  test: {
    pool: 'forks',
    // Each file gets its own modules, and a file's after-hooks run in reverse order of
    // registration: test/helpers/temp.ts removes its dirs after the file's own clean-up.
    isolate: true,
    sequence: { hooks: 'stack' },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts', 'packages/*/scripts/**/*.test.ts', 'test/**/*.test.ts'],
          // Most wait on a process (sshd, containerd, the API, vitest): more files than cores.
          maxWorkers: 4,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'node',
          include: ['packages/*/test/**/*.test.ts'],
          fileParallelism: false,
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});

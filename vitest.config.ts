/** vitest's configuration for the repository's tests (`npm test`): the four projects below. */
import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The audit image's cold build (no cache: the base made again, every layer rebuilt),
 * beside the unit tests and before the node tests: the build cache it leaves is the one
 * deploy.test.ts, a node test, then builds from, and nothing else writes it. Most of the
 * build waits on Debian's and npm's downloads, which the unit files' CPU fills.
 */
export const IMAGE = ['packages/sandbox/test/image/audit-image.test.ts'];

/**
 * Node tests that look at or change the whole host, not only their own sandbox instance:
 * the host snapshot taken before and after (scenarios, instances), a node that keeps both
 * cores busy for minutes (reset-scale), `sandbox up` on bad input proving nothing was
 * built (sandbox-input). They run alone, after the others (docs/development.md#tests).
 */
export const HOST_WIDE = [
  'packages/sandbox/test/up/scenarios.test.ts',
  'packages/sandbox/test/up/instances.test.ts',
  'packages/sandbox/test/up/sandbox-input.test.ts',
  'packages/decom/test/run/reset-scale.test.ts',
];

/**
 * The node tests that take longest (docs/development.md#how-long-the-suite-takes), started
 * first so that no long file is left to run alone at the end of the node project. On a
 * fresh clone vitest knows no durations and would order by file size.
 */
const SLOWEST_FIRST = [
  'packages/decom/test/run/reset-scenarios.test.ts',
  'packages/decom/test/run/decommission.test.ts',
  'packages/decom/test/run/drain.test.ts',
  'packages/decom/test/audit/audit.test.ts',
  'packages/sandbox/test/api/api-scenarios.test.ts',
  'packages/decom/test/run/reset-killed.test.ts',
  'packages/decom/test/audit/deploy.test.ts',
  'packages/decom/test/run/node-lock.test.ts',
  'packages/decom/test/verify/verify.test.ts',
];

/** vitest's order (failed first, then longest, from its cache), then SLOWEST_FIRST first, in its order. */
class SuiteOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOWEST_FIRST.indexOf(relative(import.meta.dirname, f.moduleId));
      return i < 0 ? Number.MAX_SAFE_INTEGER : i;
    };
    return sorted.map((f, i) => ({ f, i })).sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i).map(({ f }) => f);
  }
}

// Four projects in three groups, one group after the other (sequence.groupOrder; vitest
// runs projects of one group together only when their maxWorkers agree):
// - unit: no sandbox node (pure code, recorded fixtures, or a namespace, containerd or
//   sshd of the test's own), files in parallel; beside the sources they test, and the
//   repository's own checks in test/.
// - image: the IMAGE build, in the unit project's group (its maxWorkers the same, so the
//   two run side by side: the build's downloads overlap the unit files' CPU).
// - node: the tests that boot sandbox nodes, grouped by command under packages/*/test/,
//   two files at a time: each file has a sandbox instance of its own (w1, w2, …: the
//   test helpers name it from VITEST_WORKER_ID). Generous timeouts (a node boots in about
//   a second, a scenario in a few).
// - host: the HOST_WIDE node tests, one file at a time, last.
const NODE_TIMEOUTS = { testTimeout: 300_000, hookTimeout: 300_000 };
export default defineConfig({
  test: {
    pool: 'forks',
    // Each file gets its own modules, and a file's after-hooks run in reverse order of
    // registration: test/helpers/temp.ts removes its dirs after the file's own clean-up.
    isolate: true,
    sequence: { hooks: 'stack', sequencer: SuiteOrder },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts', 'packages/*/scripts/**/*.test.ts', 'test/**/*.test.ts'],
          // Most wait on a process (sshd, containerd, the API, vitest): more files than cores.
          maxWorkers: 4,
          testTimeout: 120_000,
          hookTimeout: 120_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'image',
          include: IMAGE,
          maxWorkers: 4,
          ...NODE_TIMEOUTS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'node',
          include: ['packages/*/test/**/*.test.ts'],
          exclude: [...IMAGE, ...HOST_WIDE],
          maxWorkers: 2,
          ...NODE_TIMEOUTS,
          sequence: { groupOrder: 2 },
        },
      },
      {
        test: {
          name: 'host',
          include: HOST_WIDE,
          fileParallelism: false,
          ...NODE_TIMEOUTS,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
});

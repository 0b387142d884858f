#!/usr/bin/env node
// The suite's one closing line, "N passed, N failed", from vitest's JSON report, and
// its exit code (0 only if nothing failed). What counts as failed: a failed test; a
// file whose set-up failed (its tests never ran); a report that is missing or holds
// no test; a failed type-check (TYPECHECK_FAILED=1); and, with CI=true, every skipped
// or todo test — in CI a test that cannot run is a test that did not pass.
//
//   node scripts/test-summary.mjs test-results/vitest.json
//   node scripts/test-summary.mjs --allow-empty unit.json node.json   (scripts/test --changed)
//
// Several reports are summed as one; a missing one counts as a failed file. With
// --allow-empty, reports that hold no test at all (vitest --changed found no test of
// the change) end "0 passed, 0 failed" and exit 0.
import { existsSync, readFileSync } from 'node:fs';

const COUNTS = ['numTotalTestSuites', 'numPassedTestSuites', 'numFailedTestSuites', 'numPendingTestSuites',
  'numTotalTests', 'numPassedTests', 'numFailedTests', 'numPendingTests', 'numTodoTests'];

/** Several vitest JSON reports as one: counts summed, files listed together; a missing report (undefined) is a failed file named by `names`. */
export function mergeReports(reports, names = []) {
  if (reports.length === 1) return reports[0];
  const merged = { ...Object.fromEntries(COUNTS.map((k) => [k, 0])), testResults: [] };
  reports.forEach((r, i) => {
    if (!r) {
      merged.testResults.push({ name: `${names[i] ?? `report ${i + 1}`} (vitest left no report)`, status: 'failed', assertionResults: [] });
      return;
    }
    for (const k of COUNTS) merged[k] += r[k] ?? 0;
    merged.testResults.push(...(r.testResults ?? []));
  });
  return merged;
}

/** @param {any} report vitest's JSON report (or undefined when there is none) */
export function summarize(report, { ci = false, typecheckFailed = false } = {}) {
  const r = report ?? { numPassedTests: 0, numFailedTests: 0, numPendingTests: 0, numTodoTests: 0, numTotalTests: 0, testResults: [] };
  const brokenFiles = (r.testResults ?? []).filter((f) => f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed')).length;
  const notRun = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  const failed = r.numFailedTests + brokenFiles + (r.numTotalTests === 0 ? 1 : 0) + Number(typecheckFailed) + (ci ? notRun : 0);
  const notRunNote = notRun && !ci ? ` (${notRun} skipped)` : '';
  const notRunTests = (r.testResults ?? []).flatMap((f) => (f.assertionResults ?? []).filter((a) => a.status === 'pending' || a.status === 'skipped' || a.status === 'todo').map((a) => `${f.name}: ${a.fullName}`));
  return { line: `${r.numPassedTests} passed, ${failed} failed${notRunNote}`, failed, notRunTests };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const allowEmpty = args[0] === '--allow-empty';
  const files = (allowEmpty ? args.slice(1) : args).length ? (allowEmpty ? args.slice(1) : args) : ['test-results/vitest.json'];
  const read = (file) => {
    try { return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined; } catch { return undefined; }
  };
  const report = mergeReports(files.map(read), files);
  if (allowEmpty && report && report.testResults?.length === 0) {
    console.log('0 passed, 0 failed (no test file imports what changed)');
    process.exit(0);
  }
  const ci = process.env.CI === 'true' || process.env.CI === '1';
  const { line, failed, notRunTests } = summarize(report, { ci, typecheckFailed: process.env.TYPECHECK_FAILED === '1' });
  if (ci) for (const t of notRunTests) console.log(`not run (counted as failed, CI=true): ${t}`);
  console.log(line);
  process.exit(failed ? 1 : 0);
}

#!/usr/bin/env node
// The suite's one closing line, "N passed, N failed", from vitest's JSON report, and
// its exit code (0 only if nothing failed). What counts as failed: a failed test; a
// file whose set-up failed (its tests never ran); a report that is missing or holds
// no test; a failed type-check (TYPECHECK_FAILED=1); and, with CI=true, every skipped
// or todo test — in CI a test that cannot run is a test that did not pass.
//
//   node scripts/test-summary.mjs test-results/vitest.json
import { readFileSync } from 'node:fs';

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
  const file = process.argv[2] ?? 'test-results/vitest.json';
  let report;
  try { report = JSON.parse(readFileSync(file, 'utf8')); } catch { report = undefined; }
  const ci = process.env.CI === 'true' || process.env.CI === '1';
  const { line, failed, notRunTests } = summarize(report, { ci, typecheckFailed: process.env.TYPECHECK_FAILED === '1' });
  if (ci) for (const t of notRunTests) console.log(`not run (counted as failed, CI=true): ${t}`);
  console.log(line);
  process.exit(failed ? 1 : 0);
}

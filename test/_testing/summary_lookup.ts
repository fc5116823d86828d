/**
 * Named parts of a run's `summary.json`, failing the test with the experiment's name when one is
 * missing.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { ComparisonSummary, RunSummary, StateCheckSummary } from "../../src/types/summary.ts";

/** The comparison called `name` (`baseline~resume-native`). */
export function comparison(summary: RunSummary, name: string): ComparisonSummary {
  const c = summary.comparisons.find((x) => x.name === name);
  assert.ok(c, `${summary.experiment}: no comparison ${name}`);
  return c;
}

/** The restore check of `phase`, or its save check with `check: "save"`. */
export function stateCheck(
  summary: RunSummary,
  phase: string,
  check?: "save",
): StateCheckSummary {
  const s = summary.state_checks.find((x) => x.phase === phase && x.check === check);
  assert.ok(s, `${summary.experiment}: no ${check ?? "restore"} check of ${phase}`);
  return s;
}

/**
 * The verdict precedence fold: FAIL > ERROR > ABSTAIN > PASS ({@link VERDICT_RANK}). Its own
 * module so the judge and the rules it applies share it without importing each other.
 *
 * @module
 */

import { type Verdict, VERDICT_RANK } from "../types/mod.ts";

/** The worst of several verdicts (PASS for none). */
export function worstVerdict(verdicts: Iterable<Verdict>): Verdict {
  let worst: Verdict = "PASS";
  for (const v of verdicts) if (VERDICT_RANK[v] > VERDICT_RANK[worst]) worst = v;
  return worst;
}

/**
 * The split's save steps, spelt once: `schedule.save_at` is one step (`20`) or an ascending list
 * (`[3, 6]`); the split saves after each and stops after the last, and a resume starts from
 * `from_step` (default the last save).
 *
 * @module
 */

import type { Experiment, ResumeEntry } from "../schema.ts";

/** The steps the split saves after, ascending as written (`20` → `[20]`). */
export function saveSteps(schedule: Pick<Experiment["schedule"], "save_at">): number[] {
  const at = schedule.save_at;
  return typeof at === "number" ? [at] : [...at];
}

/** The last save step: where the split stops and, by default, where a resume starts. */
export function lastSave(schedule: Pick<Experiment["schedule"], "save_at">): number {
  const steps = saveSteps(schedule);
  return steps[steps.length - 1];
}

/** The saved step a resume loads: its `from_step`, else the last save. */
export function resumeFromStep(
  schedule: Pick<Experiment["schedule"], "save_at">,
  resume: Pick<ResumeEntry, "from_step"> | undefined,
): number {
  return resume?.from_step ?? lastSave(schedule);
}

/** The contract's text of several steps (`${save_at}`, `PARITY_SAVE_AT`): `3,6`; one step as is. */
export function stepList(steps: readonly number[]): string {
  return steps.join(",");
}

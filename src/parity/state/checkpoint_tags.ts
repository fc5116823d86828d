/**
 * Tag folders the split left that the experiment did not ask for: a script that saves on its
 * own (an extra `save_checkpoint` at another step) leaves a checkpoint the harness never judges,
 * and a resume could load it by accident (DeepSpeed's `latest`). Pure: the pipeline lists the
 * folder and passes the names.
 *
 * @module
 */

import type { Diagnostic } from "../../types/mod.ts";
import { PARITY_CODES } from "../codes.ts";

/** Tag folders named before the rest are counted. */
const MAX_NAMED = 5;

/**
 * One warning when `folders` (the split's checkpoint folder's sub-folders) hold names of the
 * requested tags' pattern (a requested tag's name with its step as any number: `global_step7`
 * beside `global_step6`) that are not requested; other folders are left alone (a framework's
 * own log folders).
 */
export function unrequestedTags(
  phase: string,
  folders: readonly string[],
  requested: readonly { step: number; name: string }[],
): Diagnostic[] {
  const asked = new Set(requested.map((r) => r.name));
  const patterns = requested.map(({ step, name }) =>
    new RegExp(
      `^${
        name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(
          new RegExp(`(?<![0-9])${step}(?![0-9])`),
          "[0-9]+",
        )
      }$`,
    )
  );
  const extra = folders.filter((f) => !asked.has(f) && patterns.some((p) => p.test(f))).sort();
  if (extra.length === 0) return [];
  const named = extra.slice(0, MAX_NAMED).join(", ") +
    (extra.length > MAX_NAMED ? ` +${extra.length - MAX_NAMED} more` : "");
  const wanted = requested.map((r) => r.name).join(", ");
  return [{
    level: "warning",
    code: PARITY_CODES.unrequestedTags,
    phase,
    count: extra.length,
    message: `${phase}'s checkpoint folder holds ${named}, which the experiment did not ask ` +
      `for (it saves ${wanted}): a save the harness does not judge; list every save step in ` +
      "schedule.save_at (e.g. [3, 6]) instead of saving from the script",
  }];
}

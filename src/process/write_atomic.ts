/**
 * The one atomic text writer of the harness (run store, manifests, goldens, reports): a reader
 * never sees half a file, and nothing is written without the harness-wide redaction policy
 * ({@linkcode HARNESS_REDACTION}, docs/security.md). The trainer (`reference_trainer`) keeps its own
 * small writer: it sits across the process contract and may import only `affine`.
 *
 * @module
 */

import { dirname } from "node:path";
import { HARNESS_REDACTION } from "./redaction_policy.ts";

let tmpSeq = 0;

/**
 * Writes text atomically: a sibling temporary file renamed over the target. Each write has its
 * own temporary name, so concurrent writes of one file (parallel phases updating the manifest)
 * never rename each other's half-written file. When the write fails (full or read-only
 * filesystem) the temporary file is removed before the error is rethrown. The text passes
 * through the harness-wide redaction policy first (docs/security.md).
 */
export async function writeTextAtomic(path: string, text: string): Promise<void> {
  text = HARNESS_REDACTION.redactText(text);
  const tmp = `${path}.${Deno.pid}.${++tmpSeq}.tmp`;
  try {
    try {
      await Deno.writeTextFile(tmp, text);
    } catch (error) {
      // The folder is nearly always there: made only when missing, a round trip saved a write.
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      await Deno.mkdir(dirname(path), { recursive: true });
      await Deno.writeTextFile(tmp, text);
    }
    await Deno.rename(tmp, path);
  } catch (error) {
    await Deno.remove(tmp).catch(() => {}); // a full disk must not leave half a file behind
    throw error;
  }
}

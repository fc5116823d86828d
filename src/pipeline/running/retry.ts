/**
 * Flaky-infrastructure retries (`trainer.retry: {attempts, on}`): a phase that failed or timed
 * out is run again when its log tail matches one of the configured regexes (NCCL timeouts, OOM at
 * start-up, node failures). A parity failure is a verdict, not a phase failure, and never reaches
 * this module. The failed attempt's files are moved aside, kept for diagnosis, so the phase reruns
 * in a clean folder.
 *
 * ```ts
 * import { moveAttemptAside, shouldRetry } from "./retry.ts";
 *
 * const retry = { attempts: 3, on: ["NCCL timeout", "CUDA out of memory"] };
 * for (let attempt = 1; ; attempt++) {
 *   const result = await runPhaseOnce();
 *   const decision = shouldRetry(retry, attempt, result.status, result.logTail);
 *   if (!decision.retry) break;
 *   await moveAttemptAside(phaseDir, attempt);
 * }
 * ```
 *
 * @module
 */

import { join } from "node:path";
import { ATTEMPT_DIR_PATTERN } from "../store/mod.ts";

/** The `retry` block of a trainer (see `RetrySchema`). */
export interface RetryPolicy {
  /** Total attempts, the first included (1 = never retry). */
  attempts: number;
  /** Regexes matched against the log tail (multiline: `^`/`$` match at line boundaries). */
  on: string[];
}

/** Whether to run a phase again, and why. */
export interface RetryDecision {
  /** Run the phase again. */
  retry: boolean;
  /** The regex (as configured) that matched the log tail, when one did. */
  matched?: string;
  /** The text it matched, for the report. */
  match?: string;
}

/**
 * Decides whether a phase attempt is retried: only when it `failed` or hit its `timeout` (never
 * when `ok`), only while `attempt` (1-based number of the attempt that just ended) is below
 * `retry.attempts`, and only when one of the `retry.on` regexes matches `logTail`. The regexes
 * are validated when the experiment is loaded; one that does not compile here never matches.
 */
export function shouldRetry(
  retry: RetryPolicy | undefined,
  attempt: number,
  status: "ok" | "failed" | "timeout",
  logTail: string,
): RetryDecision {
  if (!retry || status === "ok" || attempt >= retry.attempts) return { retry: false };
  for (const source of retry.on) {
    let re: RegExp;
    try {
      re = new RegExp(source, "m");
    } catch {
      continue;
    }
    const m = re.exec(logTail);
    if (m) return { retry: true, matched: source, match: m[0] };
  }
  return { retry: false };
}

/**
 * Moves everything in `phaseDir` (logs, metrics, phase.json, partial checkpoints) into
 * `<phaseDir>/attempt-<attempt>/`, leaving only earlier `attempt-*` folders behind, and returns the
 * attempt folder. Safe to call again after an interruption: entries already moved stay, and a name
 * that already exists in the attempt folder gets a `.<k>` suffix instead of overwriting it.
 */
export async function moveAttemptAside(phaseDir: string, attempt: number): Promise<string> {
  if (!Number.isInteger(attempt) || attempt < 1) {
    throw new RangeError(`moveAttemptAside: attempt must be a positive integer, got ${attempt}`);
  }
  const target = join(phaseDir, `attempt-${attempt}`);
  await Deno.mkdir(target, { recursive: true });
  const names: string[] = [];
  for await (const entry of Deno.readDir(phaseDir)) {
    if (!ATTEMPT_DIR_PATTERN.test(entry.name)) names.push(entry.name);
  }
  for (const name of names.sort()) {
    await Deno.rename(join(phaseDir, name), await freeName(target, name));
  }
  return target;
}

/** Lists the attempt folders of a phase, oldest first (`attempt-1`, `attempt-2`, ...). */
export async function listAttempts(phaseDir: string): Promise<string[]> {
  const found: Array<[number, string]> = [];
  try {
    for await (const entry of Deno.readDir(phaseDir)) {
      if (entry.isDirectory && ATTEMPT_DIR_PATTERN.test(entry.name)) {
        found.push([Number(entry.name.slice("attempt-".length)), join(phaseDir, entry.name)]);
      }
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return found.sort((a, b) => a[0] - b[0]).map(([, path]) => path);
}

async function freeName(dir: string, name: string): Promise<string> {
  for (let k = 0;; k++) {
    const candidate = join(dir, k === 0 ? name : `${name}.${k}`);
    try {
      await Deno.lstat(candidate);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return candidate;
      throw e;
    }
  }
}

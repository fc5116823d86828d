/**
 * Bounds on what an experiment file may ask of the harness, checked before the expensive work
 * they guard: file size and kind before reading, nesting depth and alias expansion while parsing,
 * resume, policy and comparison counts before the matrix is expanded and the schema runs. Each is
 * an invalid-experiment error (exit 2) with a message; none is a crash (docs/security.md).
 *
 * @module
 */

import { isRecord } from "./_path.ts";
import type { ValidationError } from "./validation_errors.ts";

/** Largest experiment file read (1 MiB). */
export const MAX_EXPERIMENT_FILE_BYTES = 1024 * 1024;
/** Deepest nesting of mappings and lists accepted. */
export const MAX_NESTING_DEPTH = 64;
/** Most YAML alias uses expanded (an alias bomb stops here). */
export const MAX_YAML_ALIASES = 100;
/** Most resumes in one experiment (each is a training run). */
const MAX_RESUMES = 64;
/** Most plan-sync policies (each adds up to two phases). */
const MAX_POLICIES = 32;
/** Most explicit comparisons. */
const MAX_COMPARES = 256;

/**
 * How deeply `[`/`{` nest in `text`, ignoring quoted strings; stops counting (returning a value
 * above `limit`) as soon as `limit` is passed. Linear in the text, no recursion.
 */
export function bracketDepth(text: string, limit: number = MAX_NESTING_DEPTH): number {
  let depth = 0;
  let max = 0;
  let quote = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (quote !== 0) {
      if (c === 92 && quote === 34) i++; // backslash escape inside "..."
      else if (c === quote) quote = 0;
      continue;
    }
    if (c === 34 || c === 39) {
      // A YAML single quote only opens a string at a value start; inside a word it is text.
      const before = i === 0 ? 32 : text.charCodeAt(i - 1);
      if (
        c === 34 || before === 32 || before === 10 || before === 91 || before === 123 ||
        before === 44 || before === 58
      ) quote = c;
    } else if (c === 91 || c === 123) {
      depth++;
      if (depth > max) max = depth;
      if (max > limit) return max;
    } else if (c === 93 || c === 125) depth = Math.max(0, depth - 1);
  }
  return max;
}

/** Depth of a parsed value (a scalar is 0), without recursion; stops past `limit`. */
export function valueDepth(value: unknown, limit: number = MAX_NESTING_DEPTH): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== "object") continue;
    const inner = depth + 1;
    if (inner > max) max = inner;
    if (max > limit) return max;
    for (const child of Object.values(node)) stack.push([child, inner]);
  }
  return max;
}

/** Counts of a raw (parsed, not yet validated) experiment above their limits, as errors. */
export function countLimitErrors(raw: Record<string, unknown>): ValidationError[] {
  const errors: ValidationError[] = [];
  const resume = raw.resume;
  if (isRecord(resume) && Object.keys(resume).length > MAX_RESUMES) {
    errors.push({
      path: "resume",
      message: `${Object.keys(resume).length} resumes; at most ${MAX_RESUMES} are allowed`,
    });
  }
  const policies = isRecord(raw.plan_sync) ? raw.plan_sync.policies : undefined;
  if (Array.isArray(policies) && policies.length > MAX_POLICIES) {
    errors.push({
      path: "plan_sync.policies",
      message: `${policies.length} policies; at most ${MAX_POLICIES} are allowed`,
    });
  }
  if (Array.isArray(raw.compare) && raw.compare.length > MAX_COMPARES) {
    errors.push({
      path: "compare",
      message: `${raw.compare.length} comparisons; at most ${MAX_COMPARES} are allowed`,
    });
  }
  return errors;
}

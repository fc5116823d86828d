/**
 * From a raw parsed file to validated experiments: `--set` overrides, `matrix:` expansion, the
 * zod schema with human, path-precise messages, and the cross-field rules — every problem of a
 * file reported together.
 *
 * @module
 */

import { issuesToErrors } from "./_zod_issues.ts";
import type { z } from "zod";
import { formatPath, isRecord, valueAt } from "./_path.ts";
import {
  ExperimentFileError,
  UsageError,
  type ValidationError,
  type ValidationResult,
} from "./validation_errors.ts";
import { loadExperimentFile } from "./load.ts";
import { countLimitErrors } from "./input_limits.ts";
import { expandMatrix, type MatrixExpansion } from "./matrix.ts";
import { applySets, parseSetArgument, type SetOverride } from "./overrides.ts";
import { checkExperimentRules } from "./rules.ts";
import { type Experiment, ExperimentObjectSchema } from "./schema.ts";

/**
 * Longest experiment name (matrix suffix included) in UTF-8 bytes: it is a folder name, and
 * filesystems allow 255 bytes per name, less what lock and temporary files append.
 */
export const MAX_FOLDER_NAME_BYTES = 200;

/** Options of {@link validateExperiment}. */
export interface ValidateOptions {
  /** `--set KEY.PATH=VALUE` arguments (without the `--set`), applied in order before the matrix. */
  sets?: readonly string[];
}

/**
 * Validates a raw experiment (as returned by `loadExperimentFile`): applies `sets`, expands the
 * matrix, checks the schema and the cross-field rules. A `--set` naming a matrix key replaces
 * that matrix dimension. Errors in matrix values are reported at `matrix.<key>[i]`; an error that
 * only some combinations have ends with `(in name[k=v])`.
 *
 * @example
 * ```ts
 * const result = validateExperiment(raw, { sets: ["schedule.steps=60"] });
 * if (!result.ok) console.error(formatValidationErrors("x.yaml", result.errors).join("\n"));
 * ```
 */
export function validateExperiment(
  raw: unknown,
  options: ValidateOptions = {},
): ValidationResult<Experiment> {
  if (!isRecord(raw)) {
    const kind = Array.isArray(raw) ? "a list" : raw === null ? "nothing" : typeof raw;
    return {
      ok: false,
      errors: [{ path: "", message: `expected a mapping at the top level, got ${kind}` }],
    };
  }
  let overrides: SetOverride[];
  let data: Record<string, unknown>;
  try {
    overrides = (options.sets ?? []).map((set) => parseSetArgument(set, ExperimentObjectSchema));
    data = applySets(raw, overrides);
  } catch (error) {
    if (error instanceof UsageError) {
      return { ok: false, errors: [{ path: "", message: error.message }] };
    }
    throw error;
  }
  dropOverriddenMatrixKeys(data, overrides);
  const tooMany = countLimitErrors(data);
  if (tooMany.length > 0) return { ok: false, errors: tooMany };

  const expanded = expandMatrix(data, ExperimentObjectSchema);
  if (!expanded.ok) {
    // Still check the rest of the file so every problem is reported at once.
    const { matrix: _, ...rest } = data;
    const others = validateOne(rest).errors;
    return { ok: false, errors: dedupe([...expanded.errors, ...others]) };
  }
  const baseName = typeof data.name === "string" ? data.name : "experiment";
  const results = expanded.expansions.map((expansion) => ({
    expansion,
    ...validateOne(expansion.raw),
  }));
  const errors = mergeExpansionErrors(baseName, results);
  if (errors.length > 0) return { ok: false, errors };
  const experiments = results.map(({ expansion, experiment }) => {
    const exp = experiment!;
    exp.name = `${exp.name}${expansion.suffix}`;
    return exp;
  });
  const names = new Set<string>();
  for (const exp of experiments) {
    const bytes = new TextEncoder().encode(exp.name).length;
    if (bytes > MAX_FOLDER_NAME_BYTES) {
      return {
        ok: false,
        errors: [{
          path: "name",
          message: `the experiment name ${exp.name.slice(0, 40)}… is ${bytes} bytes with its ` +
            `matrix suffix; at most ${MAX_FOLDER_NAME_BYTES} fit in a results folder name`,
        }],
      };
    }
    if (names.has(exp.name)) {
      return {
        ok: false,
        errors: [{ path: "matrix", message: `two combinations are both named ${exp.name}` }],
      };
    }
    names.add(exp.name);
  }
  return { ok: true, experiments };
}

/**
 * Loads and validates one file (a convenience over `loadExperimentFile` + {@link validateExperiment});
 * read and syntax errors come back as errors rather than exceptions.
 */
export async function readExperimentFile(
  path: string,
  options: ValidateOptions = {},
): Promise<ValidationResult<Experiment>> {
  try {
    return validateExperiment(await loadExperimentFile(path), options);
  } catch (error) {
    if (error instanceof ExperimentFileError) return { ok: false, errors: error.errors };
    throw error;
  }
}

function validateOne(
  raw: Record<string, unknown>,
): { errors: ValidationError[]; experiment?: Experiment } {
  const parsed = ExperimentObjectSchema.safeParse(raw);
  if (parsed.success) {
    const errors = checkExperimentRules(parsed.data);
    return errors.length > 0 ? { errors } : { errors, experiment: parsed.data };
  }
  const errors = issuesToErrors(parsed.error.issues, ExperimentObjectSchema, raw);
  return { errors: [...errors, ...rulesDespiteSchemaErrors(raw, parsed.error.issues)] };
}

/**
 * Cross-field problems of a file that also has schema problems, so that one run reports both:
 * the offending optional values are removed until the schema passes (a few rounds at most), the
 * rules run on that, and rule errors touching a removed value are dropped as unreliable.
 */
function rulesDespiteSchemaErrors(
  raw: Record<string, unknown>,
  firstIssues: readonly z.core.$ZodIssue[],
): ValidationError[] {
  const repaired = structuredClone(raw);
  const removed: string[] = [];
  let issues = firstIssues;
  for (let round = 0; round < 4; round++) {
    let changed = false;
    for (const issue of issues) {
      const paths = issue.code === "unrecognized_keys"
        ? issue.keys.map((key) => [...issue.path, key])
        : [issue.path];
      for (const path of paths) {
        if (isMisspeltPreset(repaired, path as (string | number)[], issue)) {
          // The only preset is `reference`: assume it, rather than pretend no program was given.
          setPresetToReference(repaired, path as (string | number)[]);
          removed.push(formatPath(path));
          changed = true;
          continue;
        }
        const cut = removeNearestKey(repaired, path as (string | number)[]);
        if (cut === undefined) continue;
        changed = true;
        // Dropping an unknown key changes nothing the rules read; dropping a bad value might.
        if (issue.code !== "unrecognized_keys") removed.push(cut);
      }
    }
    const parsed = ExperimentObjectSchema.safeParse(repaired);
    if (parsed.success) {
      const touches = (path: string) =>
        removed.some((cut) =>
          path === cut || path.startsWith(`${cut}.`) || path.startsWith(`${cut}[`) ||
          cut.startsWith(`${path}.`) || cut.startsWith(`${path}[`)
        );
      return checkExperimentRules(parsed.data).filter((error) => !touches(error.path));
    }
    if (!changed) return [];
    issues = parsed.error.issues;
  }
  return [];
}

function isMisspeltPreset(
  root: Record<string, unknown>,
  path: (string | number)[],
  issue: z.core.$ZodIssue,
): boolean {
  return issue.code === "invalid_value" && path.length === 2 && path[1] === "preset" &&
    ["trainer", "converter", "planner"].includes(String(path[0])) &&
    isRecord(root[path[0] as string]);
}

function setPresetToReference(root: Record<string, unknown>, path: (string | number)[]) {
  (root[path[0] as string] as Record<string, unknown>).preset = "reference";
}

/** Deletes the deepest mapping key on `path` (lists are kept whole so indices stay true). */
function removeNearestKey(root: Record<string, unknown>, path: (string | number)[]) {
  for (let depth = path.length; depth > 0; depth--) {
    const key = path[depth - 1];
    if (typeof key !== "string") continue;
    const parent = valueAt(root, path.slice(0, depth - 1));
    if (isRecord(parent) && Object.hasOwn(parent, key)) {
      delete parent[key];
      return formatPath(path.slice(0, depth));
    }
    return undefined;
  }
  return undefined;
}

function dropOverriddenMatrixKeys(data: Record<string, unknown>, overrides: SetOverride[]) {
  const matrix = data.matrix;
  if (!isRecord(matrix)) return;
  for (const override of overrides) {
    const key = formatPath(override.path);
    if (override.path[0] !== "matrix" && Object.hasOwn(matrix, key)) delete matrix[key];
  }
  if (Object.keys(matrix).length === 0) delete data.matrix;
}

/**
 * Errors of matrix values move to `matrix.<key>[i]`; errors shared by every combination are
 * reported once; the rest say where they occur: `(when world_size=3)` when that describes exactly
 * the failing combinations, else their names.
 */
function mergeExpansionErrors(
  baseName: string,
  results: { expansion: MatrixExpansion; errors: ValidationError[] }[],
): ValidationError[] {
  const expansions = results.map((r) => r.expansion);
  type Group = { error: ValidationError; combos: number[]; pinned?: { k: number; index: number } };
  const groups = new Map<string, Group>();
  results.forEach(({ expansion, errors }, combo) => {
    for (const { error, pinned } of errors.map((e) => relocate(e, expansion))) {
      const key = `${error.path}\u0000${error.message}`;
      const group = groups.get(key) ?? { error, combos: [], pinned };
      if (!group.combos.includes(combo)) group.combos.push(combo);
      groups.set(key, group);
    }
  });
  const out: ValidationError[] = [];
  for (const { error, combos, pinned } of groups.values()) {
    // A relocated error belongs to one matrix value: judge it among the combinations using it.
    const universe = pinned === undefined
      ? expansions.length
      : expansions.filter((e) => e.assignments[pinned.k].index === pinned.index).length;
    if (combos.length === universe) out.push(error);
    else {
      const where = whereCombos(baseName, expansions, combos, pinned?.k);
      out.push({ path: error.path, message: `${error.message} (${where})` });
    }
  }
  return out;
}

/**
 * `when k=v` if the values shared by `combos` (other than key `skip`) select exactly them, else
 * the combination names (three at most).
 */
function whereCombos(
  baseName: string,
  expansions: MatrixExpansion[],
  combos: number[],
  skip?: number,
): string {
  const pieces = (e: MatrixExpansion) => e.suffix.slice(1, -1).split(",");
  const first = expansions[combos[0]];
  const shared = first.assignments
    .map((assignment, k) => ({ k, index: assignment.index }))
    .filter(({ k, index }) => combos.every((c) => expansions[c].assignments[k].index === index));
  const selected = expansions.filter((e) =>
    shared.every(({ k, index }) => e.assignments[k].index === index)
  );
  const described = shared.filter(({ k }) => k !== skip);
  if (described.length > 0 && selected.length === combos.length) {
    return `when ${described.map(({ k }) => pieces(first)[k]).join(", ")}`;
  }
  const names = combos.slice(0, 3).map((c) => `${baseName}${expansions[c].suffix}`);
  const more = combos.length > 3 ? ` and ${combos.length - 3} more` : "";
  return `in ${names.join(", ")}${more}`;
}

/** Moves an error about a matrix-set value to `matrix.<key>[i]` (and says which key it is). */
function relocate(
  error: ValidationError,
  expansion: MatrixExpansion,
): { error: ValidationError; pinned?: { k: number; index: number } } {
  for (const [k, assignment] of expansion.assignments.entries()) {
    const key = formatPath(pathOf(assignment.key));
    if (
      error.path === key || error.path.startsWith(`${key}.`) || error.path.startsWith(`${key}[`)
    ) {
      return {
        error: {
          path: `matrix.${assignment.key}[${assignment.index}]${error.path.slice(key.length)}`,
          message: error.message,
        },
        pinned: { k, index: assignment.index },
      };
    }
  }
  return { error };
}

function pathOf(key: string): (string | number)[] {
  try {
    return parseSetArgument(`${key}=0`).path;
  } catch {
    return [key];
  }
}

function dedupe(errors: ValidationError[]): ValidationError[] {
  const seen = new Set<string>();
  return errors.filter((error) => {
    const key = `${error.path}\u0000${error.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

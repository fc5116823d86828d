/**
 * `matrix:` expansion: a mapping from dotted paths to lists of values becomes one experiment per
 * combination (cartesian product, first key varying slowest), named `name[k=v,k2=v2]` where `k`
 * is the last path segment (more segments when two keys would share it).
 *
 * @module
 */

import type { z } from "zod";
import { didYouMean } from "./_did_you_mean.ts";
import { formatPath, isRecord } from "./_path.ts";
import { declaredKeysAt, schemasAt } from "./_schema_walk.ts";
import { UsageError, type ValidationError } from "./validation_errors.ts";
import { parseKeyPath, setAtPath } from "./overrides.ts";

/** Most combinations one matrix may produce. */
export const MAX_MATRIX_COMBINATIONS = 1024;

/** One matrix value chosen for one combination. */
export interface MatrixAssignment {
  /** The matrix key as written (`trainer.args.zero_stage`). */
  key: string;
  /** 0-based index into the key's list of values. */
  index: number;
  /** The value. */
  value: unknown;
}

/** One combination: the raw experiment with the values set and `matrix` removed. */
export interface MatrixExpansion {
  /** Raw (unvalidated) experiment of this combination. */
  raw: Record<string, unknown>;
  /** Name suffix such as `[zero_stage=3]`; empty without a matrix. */
  suffix: string;
  /** The values chosen. */
  assignments: MatrixAssignment[];
}

/**
 * Expands `raw.matrix` (checking that every key is a path of `schema`). Without a matrix the
 * result is the experiment itself with an empty suffix.
 */
export function expandMatrix(
  raw: Record<string, unknown>,
  schema: z.ZodType,
): { ok: true; expansions: MatrixExpansion[] } | { ok: false; errors: ValidationError[] } {
  const { matrix, ...base } = raw;
  if (matrix === undefined) return { ok: true, expansions: [{ raw, suffix: "", assignments: [] }] };
  const errors: ValidationError[] = [];
  if (!isRecord(matrix)) {
    return {
      ok: false,
      errors: [{ path: "matrix", message: "expected a mapping of path: [values]" }],
    };
  }
  const keys = Object.keys(matrix);
  if (keys.length === 0) errors.push({ path: "matrix", message: "expected at least one path" });
  const paths = new Map<string, (string | number)[]>();
  for (const key of keys) {
    const values = matrix[key];
    const where = `matrix.${key}`;
    if (!Array.isArray(values)) {
      errors.push({ path: where, message: "expected a list of values" });
    } else if (values.length === 0) {
      errors.push({ path: where, message: "expected at least one value" });
    }
    const problem = checkMatrixKey(key, schema);
    if (typeof problem === "string") errors.push({ path: where, message: problem });
    else paths.set(key, problem);
  }
  if (errors.length > 0) return { ok: false, errors };
  const lists = keys.map((key) => matrix[key] as unknown[]);
  const total = lists.reduce((product, list) => product * list.length, 1);
  if (total > MAX_MATRIX_COMBINATIONS) {
    return {
      ok: false,
      errors: [{
        path: "matrix",
        message: `${total} combinations; at most ${MAX_MATRIX_COMBINATIONS} are allowed`,
      }],
    };
  }
  const labels = shortLabels(keys.map((key) => paths.get(key)!));
  const expansions: MatrixExpansion[] = [];
  for (let combination = 0; combination < total; combination++) {
    // Mixed-radix digits, last key fastest.
    let rest = combination;
    const indices = new Array<number>(keys.length);
    for (let k = keys.length - 1; k >= 0; k--) {
      indices[k] = rest % lists[k].length;
      rest = Math.floor(rest / lists[k].length);
    }
    const copy = structuredClone(base);
    const assignments: MatrixAssignment[] = [];
    try {
      keys.forEach((key, k) => {
        const value = structuredClone(lists[k][indices[k]]);
        setAtPath(copy, paths.get(key)!, value, `matrix ${key}`);
        assignments.push({ key, index: indices[k], value });
      });
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      const key = keys[assignments.length];
      const reason = error.message.replace(/^--set matrix \S+: /, "");
      return { ok: false, errors: [{ path: `matrix.${key}`, message: `cannot apply: ${reason}` }] };
    }
    const suffix = `[${
      assignments.map((a, k) => valueLabel(labels[k], a.value, a.index)).join(",")
    }]`;
    expansions.push({ raw: copy, suffix, assignments });
  }
  return { ok: true, expansions };
}

/** The parsed path of a matrix key, or why it is not a field of the schema. */
function checkMatrixKey(key: string, schema: z.ZodType): (string | number)[] | string {
  let path: (string | number)[];
  try {
    path = parseKeyPath(key);
  } catch (error) {
    return (error as Error).message;
  }
  if (path[0] === "matrix" || path[0] === "name" || path[0] === "$schema") {
    return `${String(path[0])} cannot be varied by a matrix`;
  }
  for (let depth = 1; depth <= path.length; depth++) {
    if (schemasAt(schema, path.slice(0, depth)).length === 0) {
      const prefix = path.slice(0, depth - 1);
      const segment = path[depth - 1];
      const hint = typeof segment === "string"
        ? didYouMean(segment, declaredKeysAt(schema, prefix))
        : "";
      const where = prefix.length === 0 ? "at the top level" : `in ${formatPath(prefix)}`;
      return `unknown path: no field ${String(segment)} ${where}${hint}`;
    }
  }
  return path;
}

/** The shortest distinct trailing labels (`zero_stage`, or `trainer.world_size` on clashes). */
function shortLabels(paths: (string | number)[][]): string[] {
  const labelOf = (path: (string | number)[], length: number) =>
    formatPath(path.slice(Math.max(0, path.length - length))).replace(/^\./, "");
  const lengths = paths.map((path) => (typeof path[path.length - 1] === "number" ? 2 : 1));
  for (let round = 0; round < 16; round++) {
    const labels = paths.map((path, i) => labelOf(path, lengths[i]));
    let clash = false;
    labels.forEach((label, i) => {
      if (labels.indexOf(label) !== i || labels.lastIndexOf(label) !== i) {
        if (lengths[i] < paths[i].length) {
          lengths[i]++;
          clash = true;
        }
      }
    });
    if (!clash) return labels;
  }
  return paths.map((path) => formatPath(path));
}

/** `k=v` for plain values; `k#i` (1-based) for mappings, lists and strings unfit for a name. */
function valueLabel(label: string, value: unknown, index: number): string {
  if (typeof value === "number" || typeof value === "boolean") return `${label}=${value}`;
  if (typeof value === "string" && /^[A-Za-z0-9_.+-]+$/.test(value)) return `${label}=${value}`;
  return `${label}#${index + 1}`;
}

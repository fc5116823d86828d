/**
 * Turns zod issues into path-precise, human messages: `required`, `expected a positive integer,
 * got "two"`, `unknown key (did you mean world_size?)`, and picks the branch of a union the
 * author evidently meant instead of reporting every branch.
 */
import type { z } from "zod";
import { closestMatch, didYouMean } from "./_did_you_mean.ts";
import { describeValue, formatPath, isRecord, valueAt } from "./_path.ts";
import { declaredKeysAt, matchingLiteralKeys, schemasAt, unionOptions } from "./_schema_walk.ts";
import type { ValidationError } from "./validation_errors.ts";

type Issue = z.core.$ZodIssue;

/** Converts the issues of `schema.safeParse(data)` into validation errors. */
export function issuesToErrors(issues: Issue[], schema: z.ZodType, data: unknown) {
  const out: ValidationError[] = [];
  for (const issue of issues) convertIssue(issue, [], schema, data, out);
  const seen = new Set<string>();
  return out.filter((error) => {
    const key = `${error.path}\u0000${error.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Messages written in the schema start with "expected"; zod's own defaults do not. */
function isCustom(message: string): boolean {
  return message.startsWith("expected");
}

function typeName(expected: string): string {
  switch (expected) {
    case "int":
      return "an integer";
    case "number":
      return "a number";
    case "string":
      return "a string";
    case "boolean":
      return "true or false";
    case "object":
      return "a mapping";
    case "array":
      return "a list";
    case "record":
      return "a mapping";
    default:
      return expected;
  }
}

function convertIssue(
  issue: Issue,
  base: PropertyKey[],
  schema: z.ZodType,
  data: unknown,
  out: ValidationError[],
): void {
  const relative = issue.path as (string | number)[];
  const absolute = [...base, ...relative];
  const path = formatPath(absolute);
  const value = valueAt(data, absolute);
  const present = valueExists(data, absolute);
  const got = present ? `, got ${describeValue(value)}` : "";
  if (!present && issue.code !== "unrecognized_keys" && issue.code !== "custom") {
    out.push({ path, message: "required" });
    return;
  }
  switch (issue.code) {
    case "unrecognized_keys":
      out.push(...unknownKeys(issue.keys, schema, relative, absolute, value));
      return;
    case "invalid_type": {
      const expected = isCustom(issue.message)
        ? issue.message
        : `expected ${typeName(issue.expected)}`;
      out.push({ path, message: `${expected}${got}` });
      return;
    }
    case "invalid_value": {
      if (isCustom(issue.message)) {
        out.push({ path, message: `${issue.message}${got}` });
        return;
      }
      const options = issue.values.map((v) => typeof v === "string" ? v : String(v));
      const hint = typeof value === "string" ? didYouMean(value, options) : "";
      const expected = options.length === 1
        ? `expected ${JSON.stringify(issue.values[0])}`
        : `expected one of ${options.join(", ")}`;
      out.push({ path, message: `${expected}${got}${hint}` });
      return;
    }
    case "invalid_union": {
      const options = unionOptions(schemaAtRelative(schema, relative)) ?? [];
      const branch = pickBranch(issue.errors, options, value);
      if (branch === undefined) {
        const message = isCustom(issue.message) ? issue.message : expectedOfBranches(issue.errors);
        out.push({ path, message: `${message}${got}` });
        return;
      }
      for (const inner of issue.errors[branch]) {
        convertIssue(inner, absolute, options[branch], data, out);
      }
      return;
    }
    case "invalid_key": {
      const reasons = issue.issues.map((inner) => inner.message).join("; ");
      out.push({ path, message: `invalid key: ${reasons}` });
      return;
    }
    case "too_small":
    case "too_big":
      out.push({ path, message: sizeMessage(issue, got, typeof value === "number") });
      return;
    case "invalid_format": {
      const message = isCustom(issue.message) ? issue.message : `expected a valid ${issue.format}`;
      out.push({ path, message: `${message}${got}` });
      return;
    }
    default:
      out.push({ path, message: issue.message });
  }
}

/** One error per unknown key, with a did-you-mean among the keys declared there or one level down. */
function unknownKeys(
  keys: string[],
  schema: z.ZodType,
  relative: (string | number)[],
  absolute: PropertyKey[],
  value: unknown,
): ValidationError[] {
  const declared = declaredKeysAt(schema, relative);
  const allowed = declared.filter((key) => !(isRecord(value) && Object.hasOwn(value, key)));
  return keys.map((key) => {
    let hint = didYouMean(key, allowed) || didYouMean(key, declared);
    if (hint === "") {
      // A key one level too high (`trainer.world_size` for `trainer.args.world_size`).
      const nested = declared.flatMap((parent) =>
        declaredKeysAt(schema, [...relative, parent]).map((child) => `${parent}.${child}`)
      );
      const match = closestMatch(key, nested.map((path) => path.split(".")[1]));
      if (match !== undefined) {
        hint = ` (did you mean ${nested.find((path) => path.endsWith(`.${match}`))}?)`;
      }
    }
    return { path: formatPath([...absolute, key]), message: `unknown key${hint}` };
  });
}

/** The message of a too-small or too-big issue; a custom one names a number it got only. */
function sizeMessage(
  issue: Issue & { code: "too_small" | "too_big" },
  got: string,
  isNumber: boolean,
): string {
  if (isCustom(issue.message)) return `${issue.message}${isNumber ? got : ""}`;
  const bound = issue.code === "too_small" ? issue.minimum : issue.maximum;
  const words = issue.code === "too_small"
    ? (issue.inclusive ? "at least" : "more than")
    : (issue.inclusive ? "at most" : "less than");
  const unit = issue.origin === "array" ? " items" : issue.origin === "string" ? " characters" : "";
  return `expected ${words} ${String(bound)}${unit}${got}`;
}

function valueExists(data: unknown, path: PropertyKey[]): boolean {
  if (path.length === 0) return data !== undefined;
  const parent = valueAt(data, path.slice(0, -1));
  const last = path[path.length - 1];
  if (Array.isArray(parent) && typeof last === "number") return last < parent.length;
  return isRecord(parent) && typeof last === "string" && Object.hasOwn(parent, last) &&
    parent[last] !== undefined;
}

function schemaAtRelative(schema: z.ZodType, path: (string | number)[]): z.ZodType {
  return schemasAt(schema, path)[0] ?? schema;
}

/**
 * The branch the author meant: one whose root type matches the value, preferring branches whose
 * literal fields (`auto: true`) match, then the fewest problems. Undefined when no branch fits.
 */
function pickBranch(
  errors: Issue[][],
  options: z.ZodType[],
  value: unknown,
): number | undefined {
  let best: number | undefined;
  let bestScore: [number, number] = [-1, Infinity];
  errors.forEach((branchIssues, index) => {
    const rootMismatch = branchIssues.some((issue) =>
      issue.path.length === 0 &&
      (issue.code === "invalid_type" || issue.code === "invalid_value" ||
        issue.code === "invalid_union")
    );
    if (rootMismatch || options[index] === undefined) return;
    const literals = matchingLiteralKeys(options[index], value);
    const score: [number, number] = [literals, branchIssues.length];
    if (score[0] > bestScore[0] || (score[0] === bestScore[0] && score[1] < bestScore[1])) {
      best = index;
      bestScore = score;
    }
  });
  return best;
}

/** `expected a mapping or a string` from the root type errors of every union branch. */
function expectedOfBranches(errors: Issue[][]): string {
  const kinds = new Set<string>();
  for (const branch of errors) {
    for (const issue of branch) {
      if (issue.path.length === 0 && issue.code === "invalid_type") {
        kinds.add(typeName(issue.expected));
      }
      if (issue.path.length === 0 && issue.code === "invalid_value") {
        for (const value of issue.values) kinds.add(JSON.stringify(value));
      }
    }
  }
  return kinds.size === 0
    ? "expected a different kind of value"
    : `expected ${[...kinds].join(" or ")}`;
}

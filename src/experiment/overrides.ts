/**
 * `--set KEY.PATH=VALUE` overrides. The value is coerced by the type of the field it sets
 * (docs/experiment-files.md, "`--set` overrides"): into a string field the text as given
 * (`trainer.env.X=false` is `"false"`, `0185` stays `"0185"`); into a free-form `args` key a YAML
 * number or boolean only when it writes back as the same text (`2`, `true`), else the text as
 * given (`0185`, `1e-3`, `1.0`); anywhere else a YAML scalar or flow collection (`60`,
 * `{version: 1, ...}`, `[1, 2]`). `null`, `~` or an empty value removes the key. Paths use dots
 * and `[i]` for list items (`trainer.command[2]=--fast`); under `matrix.` the rest of the path is
 * one key (`matrix.trainer.args.zero_stage=[2, 3]`).
 *
 * @module
 */

import type { z } from "zod";
import { isMap, isSeq, parseDocument } from "yaml";
import { describeValue, formatPath, isRecord } from "./_path.ts";
import { scalarKindAt } from "./_schema_walk.ts";
import { UsageError } from "./validation_errors.ts";

/** One parsed `--set`. */
export interface SetOverride {
  /** The argument as given (`schedule.steps=60`), for messages. */
  text: string;
  /** Path segments: keys and list indices. */
  path: (string | number)[];
  /** New value; undefined removes the key. */
  value: unknown;
}

const SEGMENT = /^[^.[\]=\s]+$/;

/**
 * Parses a dotted key path (`trainer.command[2]`, `matrix.trainer.args.zero_stage`).
 *
 * @throws {UsageError} for an empty or malformed path.
 */
export function parseKeyPath(key: string): (string | number)[] {
  if (key === "") throw new UsageError("empty key path");
  if (key.startsWith("matrix.") && key.length > "matrix.".length) {
    return ["matrix", key.slice("matrix.".length)];
  }
  const path: (string | number)[] = [];
  for (const piece of key.split(".")) {
    const match = /^([^[\]]*)((?:\[\d+\])*)$/.exec(piece);
    if (!match || (match[1] === "" && (path.length === 0 || match[2] === ""))) {
      throw new UsageError(`malformed key path ${JSON.stringify(key)}`);
    }
    if (match[1] !== "") {
      if (!SEGMENT.test(match[1])) {
        throw new UsageError(`malformed key path ${JSON.stringify(key)}`);
      }
      path.push(match[1]);
    }
    for (const index of match[2].matchAll(/\[(\d+)\]/g)) path.push(Number(index[1]));
  }
  return path;
}

/**
 * Parses one `--set KEY.PATH=VALUE` argument. With `schema` (the experiment schema) the value is
 * coerced by the type of the field at the path (see the module documentation); without it, it is
 * parsed as YAML.
 *
 * @throws {UsageError} naming the argument when it is malformed.
 * @example
 * ```ts
 * parseSetArgument("schedule.steps=60"); // { path: ["schedule", "steps"], value: 60, ... }
 * ```
 */
export function parseSetArgument(text: string, schema?: z.ZodType): SetOverride {
  const equals = text.indexOf("=");
  if (equals < 0) throw new UsageError(`--set ${text}: expected KEY.PATH=VALUE`);
  const key = text.slice(0, equals).trim();
  let path: (string | number)[];
  try {
    path = parseKeyPath(key);
  } catch (error) {
    throw new UsageError(`--set ${text}: ${(error as Error).message}`);
  }
  const source = text.slice(equals + 1);
  const kind = schema && path[0] !== "matrix" ? scalarKindAt(schema, path) : "unknown";
  const value = kind === "string"
    ? stringSetValue(text, source)
    : kind === "free"
    ? freeSetValue(text, source)
    : parseSetValue(text, source);
  return { text, path, value };
}

/** Words YAML reads as null: they remove the key in every field. */
const NULL_WORD = /^(?:null|Null|NULL|~)$/;

/** A string field: the text as given (trimmed); a quoted YAML string is unquoted. */
function stringSetValue(text: string, source: string): unknown {
  const trimmed = source.trim();
  if (trimmed === "" || NULL_WORD.test(trimmed)) return undefined;
  if (/^["']/.test(trimmed)) {
    const value = parseSetValue(text, source);
    if (typeof value === "string") return value;
  }
  return trimmed;
}

/**
 * A free-form `args` key: YAML's value, unless YAML turns the text into a number or boolean that
 * writes back differently (`0185` → 185, `1e-3` → 0.001, `True` → true): then the text as given.
 */
function freeSetValue(text: string, source: string): unknown {
  const value = parseSetValue(text, source);
  if (
    (typeof value === "number" || typeof value === "boolean") && String(value) !== source.trim()
  ) {
    return source.trim();
  }
  return value;
}

function parseSetValue(text: string, source: string): unknown {
  if (source.trim() === "") return undefined;
  const doc = parseDocument(source, { uniqueKeys: true });
  if (doc.errors.length > 0) {
    const reason = doc.errors[0].message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
    throw new UsageError(`--set ${text}: the value is not a valid YAML scalar or flow: ${reason}`);
  }
  // `a: b` or `- x` are block collections: take such values literally, as strings.
  const contents = doc.contents;
  if ((isMap(contents) || isSeq(contents)) && !contents.flow) return source;
  const value = doc.toJS();
  return value === null ? undefined : value;
}

/**
 * Applies overrides to a copy of `raw`, creating missing mappings on the way.
 *
 * @throws {UsageError} naming the `--set` when its path goes through a value that is not a
 * mapping (or a list, for an index).
 */
export function applySets(
  raw: Record<string, unknown>,
  overrides: readonly SetOverride[],
): Record<string, unknown> {
  const root = structuredClone(raw);
  for (const override of overrides) setAtPath(root, override.path, override.value, override.text);
  return root;
}

/**
 * Sets (or, with undefined, removes) the value at `path` inside `root`, creating mappings.
 *
 * @throws {UsageError} when the path goes through a scalar, a list with a key, or a mapping
 * with an index (`what` names the origin in the message).
 */
export function setAtPath(
  root: Record<string, unknown>,
  path: readonly (string | number)[],
  value: unknown,
  what: string,
): void {
  let current: unknown = root;
  for (let depth = 0; depth < path.length; depth++) {
    const segment = path[depth];
    const last = depth === path.length - 1;
    const here = formatPath(path.slice(0, depth)) || "the top level";
    if (Array.isArray(current)) {
      if (typeof segment !== "number") {
        throw new UsageError(`--set ${what}: ${here} is a list; use ${here}[index]`);
      }
      if (segment > current.length) {
        throw new UsageError(
          `--set ${what}: ${here} has ${current.length} items; index ${segment} is out of range`,
        );
      }
      if (last) {
        if (value === undefined) current.splice(segment, 1);
        else current[segment] = value;
        return;
      }
      if (current[segment] === undefined || current[segment] === null) current[segment] = {};
      current = current[segment];
    } else if (isRecord(current)) {
      if (typeof segment === "number") {
        throw new UsageError(`--set ${what}: ${here} is a mapping, not a list`);
      }
      if (last) {
        if (value === undefined) delete current[segment];
        else current[segment] = value;
        return;
      }
      if (current[segment] === undefined || current[segment] === null) current[segment] = {};
      current = current[segment];
    } else {
      throw new UsageError(
        `--set ${what}: ${here} is ${describeValue(current)}, not a mapping`,
      );
    }
  }
}

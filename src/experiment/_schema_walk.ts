/**
 * Walks a zod 4 schema along a data path, to find the keys allowed at a place (did-you-mean for
 * unknown keys) and to decide whether a `matrix:` key names a real field.
 */
import type { z } from "zod";

// deno-lint-ignore no-explicit-any
type AnyDef = any;

function defOf(schema: z.ZodType): AnyDef {
  return (schema as unknown as { _zod: { def: AnyDef } })._zod.def;
}

/** Strips optional/default/nullable/pipe wrappers. */
function unwrapSchema(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    const def = defOf(current);
    if (
      def.type === "optional" || def.type === "default" || def.type === "nullable" ||
      def.type === "prefault" || def.type === "readonly" || def.type === "catch"
    ) current = def.innerType;
    else if (def.type === "pipe") current = def.in;
    else return current;
  }
}

/** The schemas a value at `segment` below `schema` may follow (several through unions). */
function childSchemas(schema: z.ZodType, segment: string | number): z.ZodType[] {
  const inner = unwrapSchema(schema);
  const def = defOf(inner);
  switch (def.type) {
    case "object": {
      if (typeof segment === "string" && Object.hasOwn(def.shape, segment)) {
        return [def.shape[segment]];
      }
      const catchall = def.catchall;
      if (catchall && typeof segment === "string" && defOf(catchall).type !== "never") {
        return [catchall];
      }
      return [];
    }
    case "record":
      return typeof segment === "string" ? [def.valueType] : [];
    case "array":
      return typeof segment === "number" ? [def.element] : [];
    case "union":
      return (def.options as z.ZodType[]).flatMap((option) => childSchemas(option, segment));
    default:
      return [];
  }
}

/** Every schema a value at `path` may follow; empty when the path is not part of the schema. */
export function schemasAt(root: z.ZodType, path: readonly (string | number)[]): z.ZodType[] {
  let current = [root];
  for (const segment of path) {
    current = current.flatMap((schema) => childSchemas(schema, segment));
    if (current.length === 0) return [];
  }
  return current;
}

/** Keys declared by the object schema(s) at `path` (for did-you-mean); empty if none. */
export function declaredKeysAt(root: z.ZodType, path: readonly (string | number)[]): string[] {
  return declaredKeys(schemasAt(root, path));
}

/** Keys declared by object schemas among `schemas` (unions contribute every branch). */
function declaredKeys(schemas: z.ZodType[]): string[] {
  const keys = new Set<string>();
  const visit = (schema: z.ZodType) => {
    const def = defOf(unwrapSchema(schema));
    if (def.type === "object") { for (const key of Object.keys(def.shape)) keys.add(key); }
    else if (def.type === "union") { for (const option of def.options) visit(option); }
  };
  schemas.forEach(visit);
  return [...keys];
}

/** Keys of `schema` (an object) whose schema is a literal equal to the value's field. */
export function matchingLiteralKeys(schema: z.ZodType, value: unknown): number {
  const def = defOf(unwrapSchema(schema));
  if (def.type !== "object" || typeof value !== "object" || value === null) return 0;
  let count = 0;
  for (const [key, fieldSchema] of Object.entries(def.shape as Record<string, z.ZodType>)) {
    const fieldDef = defOf(unwrapSchema(fieldSchema));
    if (fieldDef.type === "literal" && key in value) {
      const actual = (value as Record<string, unknown>)[key];
      if ((fieldDef.values as unknown[]).includes(actual)) count++;
    }
  }
  return count;
}

/** The options of a union schema (after unwrapping), or undefined. */
export function unionOptions(schema: z.ZodType): z.ZodType[] | undefined {
  const def = defOf(unwrapSchema(schema));
  return def.type === "union" ? def.options : undefined;
}

/**
 * What a `--set` value at `path` is coerced by: `string` when every schema there is a string
 * (`trainer.env.X`, `trainer.args.fault`, `description`), `free` when one is the free-form scalar
 * of an `args` map (a union of string, number and boolean with no declared key), `typed` for any
 * other field, `unknown` when the path is not part of the schema.
 */
export function scalarKindAt(
  root: z.ZodType,
  path: readonly (string | number)[],
): "string" | "free" | "typed" | "unknown" {
  const schemas = schemasAt(root, path);
  if (schemas.length === 0) return "unknown";
  const kinds = new Set(schemas.map(scalarKind));
  if (kinds.size === 1 && kinds.has("string")) return "string";
  if (!kinds.has("typed")) return "free";
  return "typed";
}

function scalarKind(schema: z.ZodType): "string" | "free" | "typed" {
  const def = defOf(unwrapSchema(schema));
  if (def.type === "string") return "string";
  if (def.type !== "union") return "typed";
  // A free-form key may also hold a list (`script_args`): no scalar text is read as one by
  // accident, so only the scalar options decide.
  const types = new Set(_leafTypes(schema).filter((t) => t !== "array"));
  const primitive = [...types].every((t) => t === "string" || t === "number" || t === "boolean");
  return primitive && types.has("string") && types.size > 1 ? "free" : "typed";
}

/** The types of a schema's options, nested unions flattened. */
function _leafTypes(schema: z.ZodType): string[] {
  const def = defOf(unwrapSchema(schema));
  return def.type === "union"
    ? (def.options as z.ZodType[]).flatMap(_leafTypes)
    : [def.type as string];
}

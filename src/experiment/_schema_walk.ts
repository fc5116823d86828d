/**
 * Walks a zod 4 schema along a data path, to find the keys allowed at a place (did-you-mean for
 * unknown keys) and to decide whether a `matrix:` key names a real field.
 */
import { z } from "zod";

/** Strips optional/default/nullable/readonly/catch/pipe wrappers (zod's public accessors). */
function unwrapSchema(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    if (
      current instanceof z.ZodOptional || current instanceof z.ZodDefault ||
      current instanceof z.ZodNullable || current instanceof z.ZodPrefault ||
      current instanceof z.ZodReadonly || current instanceof z.ZodCatch
    ) current = current.unwrap() as z.ZodType;
    else if (current instanceof z.ZodPipe) current = current.in as z.ZodType;
    else return current;
  }
}

/** The schemas a value at `segment` below `schema` may follow (several through unions). */
function childSchemas(schema: z.ZodType, segment: string | number): z.ZodType[] {
  const inner = unwrapSchema(schema);
  if (inner instanceof z.ZodObject) {
    if (typeof segment !== "string") return [];
    if (Object.hasOwn(inner.shape, segment)) return [inner.shape[segment] as z.ZodType];
    const catchall = inner.def.catchall as z.ZodType | undefined;
    return catchall && !(catchall instanceof z.ZodNever) ? [catchall] : [];
  }
  if (inner instanceof z.ZodRecord) {
    return typeof segment === "string" ? [inner.valueType as z.ZodType] : [];
  }
  if (inner instanceof z.ZodArray) {
    return typeof segment === "number" ? [inner.element as z.ZodType] : [];
  }
  if (inner instanceof z.ZodUnion) {
    return unionOf(inner).flatMap((option) => childSchemas(option, segment));
  }
  return [];
}

function unionOf(union: z.ZodUnion): z.ZodType[] {
  return [...union.options] as z.ZodType[];
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
    const inner = unwrapSchema(schema);
    if (inner instanceof z.ZodObject) { for (const key of Object.keys(inner.shape)) keys.add(key); }
    else if (inner instanceof z.ZodUnion) unionOf(inner).forEach(visit);
  };
  schemas.forEach(visit);
  return [...keys];
}

/** Keys of `schema` (an object) whose schema is a literal equal to the value's field. */
export function matchingLiteralKeys(schema: z.ZodType, value: unknown): number {
  const inner = unwrapSchema(schema);
  if (!(inner instanceof z.ZodObject) || typeof value !== "object" || value === null) return 0;
  let count = 0;
  for (const [key, fieldSchema] of Object.entries(inner.shape)) {
    const field = unwrapSchema(fieldSchema as z.ZodType);
    if (field instanceof z.ZodLiteral && key in value) {
      if (field.values.has((value as Record<string, never>)[key])) count++;
    }
  }
  return count;
}

/** The options of a union schema (after unwrapping), or undefined. */
export function unionOptions(schema: z.ZodType): z.ZodType[] | undefined {
  const inner = unwrapSchema(schema);
  return inner instanceof z.ZodUnion ? unionOf(inner) : undefined;
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
  const inner = unwrapSchema(schema);
  if (inner instanceof z.ZodString) return "string";
  if (!(inner instanceof z.ZodUnion)) return "typed";
  // A free-form key may also hold a list (`script_args`): no scalar text is read as one by
  // accident, so only the scalar options decide.
  const types = new Set(_leafTypes(schema).filter((t) => t !== "array"));
  const primitive = [...types].every((t) => t === "string" || t === "number" || t === "boolean");
  return primitive && types.has("string") && types.size > 1 ? "free" : "typed";
}

/** The types of a schema's options, nested unions flattened. */
function _leafTypes(schema: z.ZodType): string[] {
  const inner = unwrapSchema(schema);
  return inner instanceof z.ZodUnion ? unionOf(inner).flatMap(_leafTypes) : [inner.type];
}

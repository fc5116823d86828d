/**
 * Regenerates `experiments/schema.json` from the zod schema (`deno task parity schema --write`).
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { experimentJsonSchemaText, SCHEMA_FILE } from "./json_schema.ts";

/** Writes the JSON Schema to `path` (default {@link SCHEMA_FILE} under the project root). */
export async function writeSchemaFile(
  path: string = fileURLToPath(new URL(`../../${SCHEMA_FILE}`, import.meta.url)),
): Promise<string> {
  await Deno.writeTextFile(path, experimentJsonSchemaText());
  return path;
}

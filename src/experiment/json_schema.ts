/**
 * The JSON Schema of experiment files (for editors: `# yaml-language-server: $schema=...`), as
 * printed by `deno task parity schema` and committed as `experiments/schema.json`.
 *
 * @module
 */

import { z } from "zod";
import { ExperimentObjectSchema } from "./schema.ts";

/** Path of the committed schema, relative to the project root. */
export const SCHEMA_FILE = "experiments/schema.json";

/** Command that regenerates {@link SCHEMA_FILE}. */
export const SCHEMA_GEN_COMMAND = "deno task parity schema --write";

/**
 * The experiment file's JSON Schema (draft 2020-12, input form: fields with defaults are
 * optional). Cross-field rules (save_at < steps, phase names, ...) are not expressible here;
 * `deno task parity validate` checks them.
 */
export function experimentJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(ExperimentObjectSchema, { io: "input" }) as Record<
    string,
    unknown
  >;
  const { $schema, ...rest } = generated;
  return {
    $schema,
    title: "Resume-parity experiment",
    description:
      "One experiment of the resume-parity harness: a trainer, a schedule, the resumes " +
      "to compare against an uninterrupted baseline, and how to judge them. Cross-field rules " +
      "(save_at < steps, phase names in compare, reference-trainer arguments, ${placeholders}) " +
      "are checked by `deno task parity validate`. Reference: docs/experiment-files.md.",
    ...rest,
  };
}

/** The schema as the exact text of {@link SCHEMA_FILE} (2-space JSON with a final newline). */
export function experimentJsonSchemaText(): string {
  return `${JSON.stringify(experimentJsonSchema(), null, 2)}\n`;
}

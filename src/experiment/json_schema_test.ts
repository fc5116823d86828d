import { deepEqual, equal, ok } from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  experimentJsonSchema,
  experimentJsonSchemaText,
  SCHEMA_FILE,
  SCHEMA_GEN_COMMAND,
} from "./json_schema.ts";
import { writeSchemaFile } from "./schema_gen.ts";

const committed = fileURLToPath(new URL(`../../${SCHEMA_FILE}`, import.meta.url));

Deno.test("experiments/schema.json is in sync with the zod schema", async () => {
  const onDisk = await Deno.readTextFile(committed);
  equal(
    onDisk === experimentJsonSchemaText(),
    true,
    `${SCHEMA_FILE} is out of date; regenerate it with: ${SCHEMA_GEN_COMMAND}`,
  );
});

Deno.test("experimentJsonSchema() describes the input form with titles and strict objects", () => {
  const schema = experimentJsonSchema() as {
    $schema: string;
    title: string;
    required: string[];
    additionalProperties: boolean;
    properties: Record<string, { description?: string; default?: unknown }>;
  };
  equal(schema.$schema, "https://json-schema.org/draft/2020-12/schema");
  equal(schema.title, "Resume-parity experiment");
  deepEqual(schema.required.sort(), ["name", "schedule", "trainer"]);
  equal(schema.additionalProperties, false);
  equal(schema.properties.seed.default, 1234);
  ok(schema.properties.matrix.description?.includes("name[k=v"));
});

Deno.test("writeSchemaFile() writes the same text the sync test expects", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = await writeSchemaFile(`${dir}/schema.json`);
    equal(await Deno.readTextFile(path), experimentJsonSchemaText());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

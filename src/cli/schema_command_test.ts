import { deepEqual, equal } from "node:assert/strict";
import { captureConsole } from "../../test/_testing/capture_console.ts";
import { experimentJsonSchema, experimentJsonSchemaText } from "../experiment/mod.ts";
import { main } from "./main.ts";

Deno.test("parity schema prints the JSON Schema; --write PATH writes the committed form", async () => {
  const printed = await captureConsole(() => main(["schema"]));
  equal(printed.value, 0);
  deepEqual(JSON.parse(printed.out), experimentJsonSchema());
  const dir = await Deno.makeTempDir({ prefix: "parity_schema_" });
  try {
    const path = `${dir}/schema.json`;
    const written = await captureConsole(() => main(["schema", "--write", path]));
    equal(written.value, 0);
    equal(written.out, `wrote ${path}`);
    equal(await Deno.readTextFile(path), experimentJsonSchemaText());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

import { deepEqual, ok } from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { experimentJsonSchema } from "./json_schema.ts";
import { loadExperimentText } from "./load.ts";
import { validateExperiment } from "./validate_experiment.ts";

const DOC = fileURLToPath(new URL("../../docs/experiment-files.md", import.meta.url));

Deno.test("docs/experiment-files.md: every complete YAML example validates", async () => {
  const text = await Deno.readTextFile(DOC);
  const blocks = [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1])
    .filter((block) => /^name:/m.test(block) && /^schedule:/m.test(block));
  ok(blocks.length >= 3, `${blocks.length} complete examples`);
  for (const block of blocks) {
    const result = validateExperiment(loadExperimentText(block, "example.yaml"));
    deepEqual(result.ok ? [] : result.errors, [], block);
  }
});

Deno.test("docs/experiment-files.md: every field of the schema is documented", async () => {
  const text = await Deno.readTextFile(DOC);
  const names = new Set<string>();
  const visit = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === "object") {
      const record = node as Record<string, unknown>;
      if (record.properties && typeof record.properties === "object") {
        for (const name of Object.keys(record.properties)) names.add(name);
      }
      Object.values(record).forEach(visit);
    }
  };
  visit(experimentJsonSchema());
  const missing = [...names].filter((name) =>
    !new RegExp(`\`[^\`\\n]*(?<![\\w$])${name.replace("$", "\\$")}(?![\\w$])[^\`\\n]*\``).test(text)
  );
  deepEqual(missing, []);
});

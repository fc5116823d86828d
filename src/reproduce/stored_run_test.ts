import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import { validateExperiment } from "../experiment/mod.ts";
import { readStoredRun, StoredRunError } from "./stored_run.ts";

Deno.test("readStoredRun: a matrix member's resolved experiment replays under its full name", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const validated = validateExperiment({
      name: "m",
      schedule: { steps: 4, save_at: 2 },
      trainer: { command: ["t", "${steps}"], args: { lr: 1 } },
      matrix: { "trainer.args.lr": [1, 2] },
    });
    assert.ok(validated.ok);
    const exp = validated.experiments[1];
    const runDir = join(dir, "results", "m[lr=2]", "20261130T000000Z-000abc");
    await Deno.mkdir(runDir, { recursive: true });
    await Deno.writeTextFile(join(runDir, "experiment.resolved.yaml"), stringify(exp));
    await Deno.writeTextFile(
      join(runDir, "manifest.json"),
      JSON.stringify({ experiment_file: "/exp/m.yaml", children: [] }),
    );
    const stored = await readStoredRun(runDir);
    assert.equal(stored.experiment.name, "m[lr=2]");
    assert.equal(stored.experiment.trainer.args?.lr, 2);
    assert.equal(stored.baseDir, "/exp");
    assert.equal(stored.resultsDir, await Deno.realPath(join(dir, "results")));
    await assert.rejects(readStoredRun(join(dir, "nope")), StoredRunError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

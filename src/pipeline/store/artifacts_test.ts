import assert from "node:assert/strict";
import { join } from "node:path";
import { resolvePlan } from "../../experiment/mod.ts";
import { ExperimentObjectSchema } from "../../experiment/schema.ts";
import { missingArtifact } from "./artifacts.ts";

function splitSpec(runDir: string) {
  const exp = ExperimentObjectSchema.parse({
    name: "hf",
    schedule: { steps: 40, save_at: 20 },
    trainer: { command: ["python", "train.py", "--output_dir=${output_dir}"] },
    resume: { native: { from: "native" } },
  });
  const plan = resolvePlan(exp, { runDir, baseDir: "/exp", harnessEnv: {} });
  return plan.phases.find((s) => s.role === "split")!;
}

Deno.test("missingArtifact() names the tag a trainer saved under and the checkpoint_tag to set", async () => {
  const runDir = await Deno.makeTempDir({ prefix: "parity_artifacts_" });
  try {
    const spec = splitSpec(runDir);
    assert.match(
      (await missingArtifact(spec))!,
      /global_step20 was not written \(nothing was saved in .*split\/checkpoints: save to \$\{output_dir\}/,
    );
    // A Hugging Face Trainer saves checkpoint-<N> under its --output_dir.
    await Deno.mkdir(join(spec.paths.outputDir!, "checkpoint-20"), { recursive: true });
    await Deno.mkdir(join(spec.paths.outputDir!, "runs"), { recursive: true });
    assert.equal(
      await missingArtifact(spec),
      `missing artifact: checkpoint ${spec.paths.checkpointTag} was not written (the folder ` +
        'holds checkpoint-20, runs: set trainer.checkpoint_tag: "checkpoint-${save_at}")',
    );
    await Deno.mkdir(spec.paths.checkpointTag!);
    assert.equal(await missingArtifact(spec), null);
  } finally {
    await Deno.remove(runDir, { recursive: true });
  }
});

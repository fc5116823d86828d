import assert from "node:assert/strict";
import { join } from "node:path";
import { type Experiment, readExperimentFile } from "../../experiment/mod.ts";
import { PROJECT_DIR } from "../../presets/mod.ts";
import { UsageError } from "../../types/harness_error.ts";
import { BUNDLE_FILE, writeBundle } from "./offline_bundle.ts";
import { computeKeys } from "../store/cache.ts";
import { resolvePlan } from "../../experiment/mod.ts";
import { readBundle } from "./offline_import.ts";

async function quickstart() {
  const file = join(PROJECT_DIR, "experiments/quickstart.yaml");
  const read = await readExperimentFile(file, { sets: [] });
  assert.ok(read.ok);
  return { file, exp: read.experiments[0] };
}

/** The experiment resolved once, as `parity plan --bundle` does. */
function planned(exp: Experiment, baseDir: string) {
  return { plan: resolvePlan(exp, { baseDir, harnessEnv: {} }), experiment: exp };
}

Deno.test("writeBundle: the runner's phases, order and keys, with this machine's paths as tokens", async () => {
  const dir = await Deno.makeTempDir({ prefix: "parity-bundle-" });
  try {
    const { file, exp } = await quickstart();
    const options = { baseDir: join(PROJECT_DIR, "experiments"), harnessEnv: {} };
    const bundle = await writeBundle(planned(exp, options.baseDir), {
      ...options,
      bundleDir: join(dir, "b"),
      experimentFile: file,
      sets: [],
    });
    assert.deepEqual(await readBundle(join(dir, "b")), bundle);
    const plan = resolvePlan(exp, { runDir: join(dir, "elsewhere"), ...options });
    const keys = await computeKeys(plan.phases, options.baseDir, {});
    assert.deepEqual(
      bundle.phases.map((p) => [p.name, p.consumes, p.cache_key]),
      plan.phases.map((s) => [s.name, s.consumes, keys.get(s.name)]),
      "same phases, order and keys wherever the run folder is",
    );
    const text = await Deno.readTextFile(join(dir, "b", BUNDLE_FILE));
    assert.ok(!text.includes(PROJECT_DIR) && !text.includes(dir));
    const byName = new Map(bundle.phases.map((p) => [p.name, p]));
    assert.deepEqual(byName.get("convert")!.must_leave, {
      universal: "<run>/phases/convert/global_step20_universal",
    });
    const planner = bundle.phases.find((p) => p.role === "plan")!;
    assert.equal(
      Object.keys(planner.write_files).length,
      1,
      "the target topology is written there",
    );
    assert.ok(bundle.phases.every((p) => p.argv[0] === "<deno>"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("writeBundle refuses a folder that is not empty", async () => {
  const dir = await Deno.makeTempDir({ prefix: "parity-bundle-" });
  try {
    await Deno.writeTextFile(join(dir, "x"), "");
    const { exp } = await quickstart();
    await assert.rejects(
      writeBundle(planned(exp, PROJECT_DIR), {
        bundleDir: dir,
        baseDir: PROJECT_DIR,
        harnessEnv: {},
        experimentFile: null,
      }),
      (e) => e instanceof UsageError && /not empty/.test(e.message),
    );
    await assert.rejects(readBundle(dir), UsageError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Disk: `keep_checkpoints: none` deletes a run's checkpoints once it is judged, yet an unchanged
 * re-run still reuses every phase (nothing needs the pruned checkpoints); a phase that must run
 * again brings its producer back. `deno task parity gc` deletes what no cached phase needs.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { pathExists } from "../src/pipeline/store/run_store.ts";
import type { RunSummary } from "../src/types/summary.ts";
import { latestSummary, runCli, writeExperiment } from "./_testing/cli_harness.ts";

const tiny = (keep: string) => ({
  name: "retention",
  schedule: { steps: 8, save_at: 4 },
  trainer: { preset: "reference", args: { world_size: 2, ep_size: 2, precision: "bf16" } },
  resume: { native: { from: "native" }, universal: { from: "universal" } },
  keep_checkpoints: keep,
});

const cached = (s: RunSummary) => Object.fromEntries(s.phases.map((p) => [p.name, p.cached]));

Deno.test("keep_checkpoints: none prunes, re-runs reuse everything, a forced resume brings the split back", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await writeExperiment(dir, "exp.yaml", tiny("none"));
    const results = join(dir, "results");
    const first = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(first.code, 0, first.stderr);
    const s1 = await latestSummary(results, "retention");
    const run1 = join(results, "retention", s1.run_id);
    assert.equal(
      await pathExists(join(run1, "phases/split/checkpoints")),
      false,
      "split checkpoint pruned",
    );
    assert.equal(await pathExists(join(run1, "phases/convert/global_step4_universal")), false);
    const split = JSON.parse(await Deno.readTextFile(join(run1, "phases/split/phase.json")));
    assert.equal(split.artifacts_pruned, true);

    const second = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(cached(await latestSummary(results, "retention")), {
      baseline: true,
      split: true,
      "resume-native": true,
      convert: true,
      "resume-universal": true,
    });

    const forced = await runCli([
      "run",
      file,
      "--results",
      results,
      "--quiet",
      "--force",
      "resume-native",
    ]);
    assert.equal(forced.code, 0, forced.stderr);
    assert.deepEqual(cached(await latestSummary(results, "retention")), {
      baseline: true,
      split: false, // its checkpoint is needed again
      "resume-native": false,
      convert: true, // nothing reads the pruned universal checkpoint
      "resume-universal": true,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parity gc deletes the checkpoints no cached phase needs, --dry-run only lists them", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await writeExperiment(dir, "exp.yaml", tiny("all"));
    const results = join(dir, "results");
    assert.equal((await runCli(["run", file, "--results", results, "--quiet"])).code, 0);
    const old = (await latestSummary(results, "retention")).run_id;
    assert.equal(
      (await runCli(["run", file, "--results", results, "--quiet", "--set", "seed=5"])).code,
      0,
    );
    const oldCheckpoints = join(results, "retention", old, "phases/split/checkpoints");

    const dry = await runCli(["gc", results, "--dry-run"]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout + dry.stderr, new RegExp(`${old}.*split`));
    assert.equal(await pathExists(oldCheckpoints), true, "--dry-run deletes nothing");

    const gc = await runCli(["gc", results]);
    assert.equal(gc.code, 0, gc.stderr);
    assert.equal(
      await pathExists(oldCheckpoints),
      false,
      "the superseded run's checkpoint is gone",
    );
    const latest = (await latestSummary(results, "retention")).run_id;
    assert.equal(
      await pathExists(join(results, "retention", latest, "phases/split/checkpoints")),
      true,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

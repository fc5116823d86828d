/**
 * `parity plan` prints exactly what the runner then runs: the same phases in the same order,
 * with the same argv, environment and working folders, and afterwards reports them cached.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { ManifestChild } from "../src/pipeline/store/manifest.ts";
import type { PlanPreview } from "../src/pipeline/running/plan_preview.ts";
import { runCli } from "./_testing/cli_harness.ts";

const QUICKSTART = "experiments/quickstart.yaml";

async function plan(results: string, ...extra: string[]): Promise<PlanPreview> {
  const out = await runCli(["plan", QUICKSTART, "--results", results, "--json", ...extra]);
  assert.equal(out.code, 0, out.stderr);
  return JSON.parse(out.stdout);
}

Deno.test("parity plan matches the phases, argv, env and cwd the runner actually launches", async () => {
  const results = await Deno.makeTempDir({ prefix: "parity-plan-" });
  try {
    const before = await plan(results);
    assert.equal(before.phases.length, 12);
    assert.ok(before.phases.every((p) => p.cached_from === null), "nothing ran yet");
    assert.equal(
      (await Deno.readDir(results)[Symbol.asyncIterator]().next()).done,
      true,
      "plan writes nothing",
    );

    const run = await runCli(["run", QUICKSTART, "--results", results, "--quiet"]);
    assert.equal(run.code, 0, run.stderr);
    const runDir = await Deno.realPath(join(results, "quickstart", "latest"));
    const manifest = JSON.parse(await Deno.readTextFile(join(runDir, "manifest.json")));
    const local = (text: string) => text.replaceAll(runDir, "<run>");
    const launched = (manifest.children as ManifestChild[]).map((c) => ({
      name: c.phase,
      argv: c.argv.map(local),
      env: Object.fromEntries(Object.entries(c.env).map(([k, v]) => [k, local(v)])),
      cwd: local(c.cwd),
    }));
    assert.deepEqual(
      launched,
      before.phases.map((p) => ({ name: p.name, argv: p.argv, env: p.env, cwd: p.cwd })),
    );

    // Each plan stands beside the reshard that ran on its target topology.
    const summary = JSON.parse(await Deno.readTextFile(join(runDir, "summary.json")));
    for (const p of summary.plan_sync) assert.deepEqual(p.reshard_resumes, ["resume-reshard"]);

    const after = await plan(results);
    for (const phase of after.phases) assert.equal(phase.cached_from, runDir, phase.name);
    assert.deepEqual(
      after.phases.map((p) => p.cache_key),
      before.phases.map((p) => p.cache_key),
      "the keys do not depend on the run folder",
    );
  } finally {
    await Deno.remove(results, { recursive: true });
  }
});

Deno.test("parity plan shows a changed setting as a phase that runs again, and lanes with reasons", async () => {
  const results = await Deno.makeTempDir({ prefix: "parity-plan-" });
  try {
    const preview = await plan(results, "--set", "resume.reshard.lane=exact");
    const reshard = preview.phases.find((p) => p.name === "resume-reshard")!;
    assert.deepEqual(reshard.lane, { lane: "exact", reason: "declared in resume.reshard.lane" });
    const native = preview.phases.find((p) => p.name === "resume-native")!;
    assert.equal(native.lane?.reason, "same topology as the saved checkpoint");
    const text = await runCli(["plan", QUICKSTART, "--results", results]);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /\[3\/12\] resume-native \(resume\) — runs/);
    assert.match(
      text.stdout,
      /lane vs baseline: drift \(topology differs from the saved checkpoint/,
    );
    const bad = await runCli(["plan", QUICKSTART, "--set", "schedule.save_at=400"]);
    assert.equal(bad.code, 2, "an invalid file is refused as by run");
    assert.match(bad.stderr, /schedule\.save_at/);
  } finally {
    await Deno.remove(results, { recursive: true });
  }
});

Deno.test("parity plan expands the GPU seed experiment into torchrun, offload and nccl settings", async () => {
  const out = await runCli([
    "plan",
    "experiments/deepspeed/gpu_autoep_seed.yaml",
    "--results",
    "/nonexistent-results",
    "--json",
  ]);
  assert.equal(out.code, 0, out.stderr);
  const preview: PlanPreview = JSON.parse(out.stdout);
  assert.deepEqual(preview.phases.map((p) => p.name), [
    "baseline",
    "split",
    "resume-native",
    "resume-native-primed",
    "convert",
    "resume-universal",
  ]);
  const universal = preview.phases.find((p) => p.name === "resume-universal")!;
  const flag = (name: string) => universal.argv[universal.argv.indexOf(name) + 1];
  assert.ok(universal.argv[0].endsWith(".venv-deepspeed/bin/torchrun"));
  assert.equal(flag("--nproc-per-node"), "4");
  assert.equal(flag("--autoep-size"), "4");
  assert.equal(flag("--zero-stage"), "3");
  assert.equal(flag("--offload"), "cpu");
  assert.equal(flag("--resume-kind"), "universal", "the script sets load_universal from it");
  assert.equal(universal.env.DS_ACCELERATOR, "cuda");
  assert.equal(universal.env.CUBLAS_WORKSPACE_CONFIG, ":4096:8");
  assert.equal(flag("--model"), "deepseek_v3", "the seed model's class");
  assert.equal(flag("--optimizer"), "cpu_adam", "the seed's optimizer");
  assert.ok(universal.env.TORCH_EXTENSIONS_DIR.endsWith(".venv-deepspeed/torch_extensions"));
  const convert = preview.phases.find((p) => p.name === "convert")!;
  assert.ok(convert.argv.includes("deepspeed.checkpoint.ds_to_universal"));
});

Deno.test("parity plan lists the variables a cache key leaves out; a tokenizer setting is keyed and shown", async () => {
  const results = await Deno.makeTempDir({ prefix: "parity-plan-" });
  try {
    const sets = [
      "--set",
      "trainer.env.TOKENIZERS_PARALLELISM=false",
      "--set",
      "trainer.env.HF_TOKEN=${env.HF_TOKEN}",
    ];
    const env = { HF_TOKEN: `hf_${"Q".repeat(34)}` };
    const text = await runCli(["plan", QUICKSTART, "--results", results, ...sets], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /env TOKENIZERS_PARALLELISM=false\n/);
    assert.match(text.stdout, /env HF_TOKEN='?<redacted>'?\n/);
    assert.match(text.stdout, /not in the cache key: HF_TOKEN \(secret-named: /);
    assert.doesNotMatch(text.stdout, /not in the cache key: TOKENIZERS_PARALLELISM/);
    assert.ok(!text.stdout.includes(env.HF_TOKEN), "the secret itself is never printed");
    const json = await runCli(["plan", QUICKSTART, "--results", results, "--json", ...sets], env);
    const preview = JSON.parse(json.stdout) as PlanPreview;
    for (const phase of preview.phases.filter((p) => p.role !== "plan" && p.role !== "convert")) {
      assert.deepEqual(phase.key_left_out.map((v) => v.name), ["HF_TOKEN"], phase.name);
    }
    // TOKENIZERS_PARALLELISM is in the key: true and false are different keys.
    const flipped = await runCli([
      "plan",
      QUICKSTART,
      "--results",
      results,
      "--json",
      "--set",
      "trainer.env.TOKENIZERS_PARALLELISM=true",
    ]);
    const baseline = (p: PlanPreview) => p.phases.find((x) => x.name === "baseline")!.cache_key;
    assert.notEqual(baseline(JSON.parse(flipped.stdout)), baseline(preview));
  } finally {
    await Deno.remove(results, { recursive: true });
  }
});

Deno.test("parity plan of a fused split: no split phase, and the savings estimated before anything runs", async () => {
  const results = await Deno.makeTempDir({ prefix: "parity-plan-fused-" });
  try {
    const fused = ["--set", "schedule.split=fused"];
    const before = await plan(results, ...fused);
    assert.equal(before.phases.length, 11);
    assert.ok(!before.phases.some((p) => p.role === "split"));
    assert.deepEqual(before.phases.find((p) => p.name === "resume-native")!.consumes, ["baseline"]);
    assert.equal(before.bill.fused_step_equivalents, 20);
    // No baseline has run: fusing is priced in step-equivalents only.
    assert.deepEqual(before.bill.saving_estimate.fused, { phases: 1, step_equivalents: 20 });
    assert.equal(before.bill.saving_estimate.cached.phases, 0);

    const run = await runCli(["run", QUICKSTART, "--results", results, "--quiet", ...fused]);
    assert.equal(run.code, 0, run.stderr);
    const after = await plan(results, ...fused);
    // Every phase would now be reused: the estimate prices each at the wall it took.
    const { cached, fused: fusedSaving } = after.bill.saving_estimate;
    assert.equal(cached.phases, 11);
    assert.ok(cached.device_seconds! > 0);
    assert.ok(fusedSaving!.device_seconds! > 0);
    const text = await runCli(["plan", QUICKSTART, "--results", results, ...fused]);
    assert.match(
      text.stdout,
      /estimated savings \(earlier walls × devices.*\): cache 160 step-equivalents, [\d.]+ device-seconds, fusing 20 step-equivalents, [\d.]+ device-seconds/,
    );
  } finally {
    await Deno.remove(results, { recursive: true });
  }
});

/**
 * The offline path end to end: `parity plan --bundle` writes the resolved phases,
 * `tools/offline_phases.py` (Python standard library, no Deno of its own) runs them with the
 * system python3, and `parity run --import` judges them here without launching anything — the
 * same verdicts as a normal run; a phase that failed there is ERROR with its log tail; a
 * checkpoint that did not come back is said so. Also the bundle of the GPU experiment, dry.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Bundle } from "../src/pipeline/offline/offline_bundle.ts";
import type { RunSummary } from "../src/types/summary.ts";
import { latestSummary, PROJECT, runCli, writeExperiment } from "./_testing/cli_harness.ts";

const OFFLINE = join(PROJECT, "tools/offline_phases.py");

/** A small reference experiment: baseline, split, convert, native and universal resumes. */
const SMALL = {
  name: "offline-small",
  seed: 11,
  schedule: { steps: 8, save_at: 4 },
  trainer: { preset: "reference", timeout: 120, args: { world_size: 2, ep_size: 2 } },
  resume: { native: { from: "native" }, universal: { from: "universal" } },
};

async function python(
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command("python3", {
    args,
    cwd: PROJECT,
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

async function exportBundle(file: string, bundle: string, ...extra: string[]): Promise<Bundle> {
  const out = await runCli(["plan", file, "--bundle", bundle, ...extra]);
  assert.equal(out.code, 0, out.stderr);
  return JSON.parse(await Deno.readTextFile(join(bundle, "bundle.json")));
}

async function manifestChildren(results: string, experiment: string): Promise<unknown[]> {
  const path = join(results, experiment, "latest", "manifest.json");
  return JSON.parse(await Deno.readTextFile(path)).children;
}

async function firstFile(dir: string): Promise<string> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isFile) return path;
    if (e.isDirectory) return await firstFile(path);
  }
  throw new Error(`${dir}: no file`);
}

const verdicts = (s: RunSummary) => s.comparisons.map((c) => [c.name, c.lane, c.verdict]);

Deno.test("export, offline_phases.py, --import: the verdicts of a normal run, nothing launched", async () => {
  const dir = await Deno.makeTempDir({ prefix: "parity-offline-" });
  try {
    const file = await writeExperiment(dir, "small.yaml", SMALL);
    const normal = await runCli(["run", file, "--results", join(dir, "normal"), "--quiet"]);
    assert.equal(normal.code, 0, normal.stderr);
    const expected = await latestSummary(join(dir, "normal"), SMALL.name);

    const bundleDir = join(dir, "bundle");
    const bundle = await exportBundle(file, bundleDir);
    assert.deepEqual(bundle.phases.map((p) => p.name), expected.phases.map((p) => p.name));
    const text = await Deno.readTextFile(join(bundleDir, "bundle.json"));
    assert.ok(!text.includes(PROJECT) && !text.includes(bundleDir), "paths are tokens");

    const back = join(dir, "back");
    const ran = await python(OFFLINE, bundleDir, "--deno", Deno.execPath(), "--copy-to", back);
    assert.equal(ran.code, 0, ran.stdout + ran.stderr);
    assert.match(
      ran.stdout,
      /^offline: copied [\d.]+ MiB to .*; left here: 2 checkpoint folder\(s\)$/m,
    );
    const lines = ran.stdout.match(/^phase \d+\/\d+ \S+ \.\.\. ok in \d+\.\d s$/gm) ?? [];
    assert.equal(lines.length, bundle.phases.length, ran.stdout);

    const results = join(dir, "imported");
    const judged = await runCli(["run", file, "--results", results, "--import", bundleDir]);
    assert.equal(judged.code, normal.code, judged.stderr);
    const summary = await latestSummary(results, SMALL.name);
    assert.deepEqual(verdicts(summary), verdicts(expected));
    assert.equal(summary.verdict, expected.verdict);
    assert.ok(summary.phases.every((p) => p.cached && p.status === "ok"), "every phase reused");
    assert.deepEqual(await manifestChildren(results, SMALL.name), [], "no child launched");
    assert.match(judged.stderr, /imported the offline bundle .* 5 ok/);
    const where = summary.diagnostics.find((d) => d.code === "ran-offline");
    assert.match(
      where?.message ?? "",
      /^the phases ran offline on [^;]+; the manifest's `environment` describes the machine that judged them, its `ran_offline` the one that ran them$/,
    );
    const manifest = JSON.parse(
      await Deno.readTextFile(join(results, SMALL.name, "latest", "manifest.json")),
    );
    assert.equal(typeof manifest.ran_offline?.host, "string", "the manifest names where it ran");

    // The copy for the trip back, without the checkpoints: the same verdicts, and said.
    const light = join(dir, "light");
    const fromCopy = await runCli([
      "run",
      file,
      "--results",
      light,
      "--import",
      join(back, "bundle"),
    ]);
    assert.equal(fromCopy.code, normal.code, fromCopy.stderr);
    const lightSummary = await latestSummary(light, SMALL.name);
    assert.deepEqual(verdicts(lightSummary), verdicts(expected));
    assert.deepEqual(
      lightSummary.diagnostics.filter((d) => d.code === "checkpoint-not-returned").map((d) =>
        d.phase
      ),
      ["split", "convert"],
    );
    assert.deepEqual(await manifestChildren(light, SMALL.name), [], "no child launched");

    // Another plan (here another seed) has other cache keys: refused, nothing imported.
    const other = await runCli([
      "run",
      file,
      "--set",
      "seed=12",
      "--results",
      results,
      "--import",
      bundleDir,
    ]);
    assert.equal(other.code, 2, other.stderr);
    assert.match(other.stderr, /phase baseline has cache key \w+ there, \w+ here/);
    const mixed = await runCli([
      "run",
      file,
      "--import",
      bundleDir,
      "--only",
      "baseline",
      "--results",
      results,
    ]);
    assert.equal(mixed.code, 2);
    assert.match(mixed.stderr, /launch nothing: drop --only and --force/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a phase that failed offline is ERROR with its log tail; a checkpoint not brought back is said", async () => {
  const dir = await Deno.makeTempDir({ prefix: "parity-offline-" });
  try {
    const file = await writeExperiment(dir, "small.yaml", SMALL);
    const bundleDir = join(dir, "bundle");
    const bundle = await exportBundle(file, bundleDir);
    // The target's crash: the native resume's program dies with a message and exit code 7.
    const native = bundle.phases.find((p) => p.name === "resume-native")!;
    native.argv = ["<deno>", "eval", "console.error('offline boom: CUDA error'); Deno.exit(7)"];
    await Deno.writeTextFile(join(bundleDir, "bundle.json"), JSON.stringify(bundle));

    const ran = await python(OFFLINE, bundleDir, "--deno", Deno.execPath());
    assert.equal(ran.code, 3, ran.stdout + ran.stderr);
    assert.match(
      ran.stdout,
      /^phase \d\/5 resume-native \.\.\. failed in [\d.]+ s \(exit code 7\)$/m,
    );
    const result = JSON.parse(
      await Deno.readTextFile(join(bundleDir, "phases/resume-native/offline_result.json")),
    );
    assert.equal(result.status, "failed");
    assert.equal(result.exit_code, 7);
    // The split's checkpoint stays on the target (too large to bring back); the converter's
    // universal folder comes back with one file of another size (a copy cut short or garbled).
    await Deno.remove(join(bundleDir, "phases/split/checkpoints"), { recursive: true });
    const universal = join(bundleDir, "phases/convert/global_step4_universal");
    await Deno.writeTextFile(await firstFile(universal), "garbled", { append: true });

    // An earlier, passing run in the same results folder does not stand in for the bundle.
    const results = join(dir, "imported");
    const earlier = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(earlier.code, 0, earlier.stderr);
    const judged = await runCli(["run", file, "--results", results, "--import", bundleDir]);
    assert.equal(judged.code, 3, judged.stderr);
    const summary = await latestSummary(results, SMALL.name);
    assert.equal(summary.verdict, "ERROR");
    const phase = summary.phases.find((p) => p.name === "resume-native")!;
    assert.equal(phase.status, "failed");
    assert.equal(phase.exit_code, 7);
    assert.match(phase.message ?? "", /ran offline: exit code 7/);
    assert.match(phase.log_tail ?? "", /offline boom: CUDA error/);
    const byName = Object.fromEntries(summary.comparisons.map((c) => [c.name, c.verdict]));
    assert.equal(byName["baseline~resume-native"], "ERROR");
    assert.equal(
      byName["baseline~resume-universal"],
      "PASS",
      "judged without the checkpoint bytes",
    );
    const notBack = summary.diagnostics.filter((d) => d.code === "checkpoint-not-returned");
    assert.deepEqual(notBack.map((d) => d.phase), ["split", "convert"]);
    assert.match(notBack[0].message, /not brought back/);
    assert.match(notBack[1].message, /brought back incomplete \(\d+ of \d+ files as written\)/);
    assert.deepEqual(await manifestChildren(results, SMALL.name), [], "nothing re-run here");
    assert.match(
      await Deno.readTextFile(join(results, SMALL.name, "latest/report.md")),
      /not brought back/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("offline_phases.py stops a phase's whole process group at its timeout", async () => {
  const dir = await Deno.makeTempDir({ prefix: "parity-offline-" });
  try {
    const file = await writeExperiment(dir, "small.yaml", SMALL);
    const bundleDir = join(dir, "bundle");
    const bundle = await exportBundle(file, bundleDir);
    // The phase starts a grandchild and hangs: both must be gone once the timeout is past.
    const pidFile = join(dir, "grandchild.pid");
    bundle.phases[0].timeout_s = 1;
    bundle.phases[0].argv = [
      "<deno>",
      "eval",
      `const c = new Deno.Command("sleep", { args: ["60"] }).spawn();
       Deno.writeTextFileSync(${JSON.stringify(pidFile)}, String(c.pid));
       await c.status;`,
    ];
    await Deno.writeTextFile(join(bundleDir, "bundle.json"), JSON.stringify(bundle));
    const ran = await python(OFFLINE, bundleDir, "--deno", Deno.execPath(), "--only", "baseline");
    assert.equal(ran.code, 3, ran.stdout + ran.stderr);
    assert.match(ran.stdout, /baseline \.\.\. timeout in [\d.]+ s \(timed out after 1 s/);
    const result = JSON.parse(
      await Deno.readTextFile(join(bundleDir, "phases/baseline/offline_result.json")),
    );
    assert.equal(result.status, "timeout");
    assert.ok(result.wall_s < 15, `${result.wall_s} s`);
    const pid = Number(await Deno.readTextFile(pidFile));
    assert.ok(await _ends(pid, 5_000), `the grandchild ${pid} was stopped with its group`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the GPU experiment's bundle: portable paths, <python> overridable, no secret", async () => {
  const dir = await Deno.makeTempDir({ prefix: "parity-offline-" });
  const secret = "hf_offlineBundleSecret0123456789";
  try {
    const bundleDir = join(dir, "gpu");
    const sets = [
      "trainer.args.world_size=1",
      "trainer.args.autoep_size=1",
      "trainer.env.HF_TOKEN=${env.HF_TOKEN}",
    ].flatMap((s) => ["--set", s]);
    const out = await runCli(
      ["plan", "experiments/deepspeed/gpu_autoep_seed.yaml", ...sets, "--bundle", bundleDir],
      { HF_TOKEN: secret },
    );
    assert.equal(out.code, 0, out.stderr);
    const text = await Deno.readTextFile(join(bundleDir, "bundle.json"));
    assert.ok(!text.includes(secret), "the secret is never written");
    assert.ok(!text.includes(PROJECT) && !text.includes(dir), "no path of this machine");
    const bundle: Bundle = JSON.parse(text);
    assert.equal(bundle.python, "<project>/.venv-deepspeed/bin/python");
    assert.equal(bundle.experiment_file, "<project>/experiments/deepspeed/gpu_autoep_seed.yaml");
    assert.deepEqual(bundle.phases.map((p) => p.name), [
      "baseline",
      "split",
      "resume-native",
      "resume-native-primed",
      "convert",
      "resume-universal",
    ]);
    for (const p of bundle.phases) {
      assert.equal(p.argv[0], "<python>", p.name);
      // The converter has its own env (converter.env): the trainer's secret is not its.
      assert.deepEqual(p.env_from_target, p.role === "convert" ? [] : ["HF_TOKEN"], p.name);
      assert.ok(!("HF_TOKEN" in p.env));
      assert.equal(p.dir, `<run>/phases/${p.name}`);
      assert.equal(p.timeout_s, p.role === "convert" ? 3600 : 7200, p.name); // the converter's default
      assert.match(p.cache_key, /^[0-9a-f]{32}$/);
    }
    const baseline = bundle.phases[0];
    assert.deepEqual(baseline.argv.slice(0, 5), [
      "<python>",
      "-m",
      "torch.distributed.run",
      "--standalone",
      "--nproc-per-node",
    ]);
    assert.equal(baseline.env.PARITY_METRICS_FILE, "<run>/phases/baseline/metrics.jsonl");
    const split = bundle.phases[1];
    assert.equal(split.must_leave.checkpoint, "<run>/phases/split/checkpoints/global_step50");
    assert.equal(
      bundle.phases[4].argv.slice(1, 3).join(" "),
      "-m deepspeed.checkpoint.ds_to_universal",
    );

    // --python replaces the interpreter (a stand-in that prints its argv); paths become this checkout's.
    const ran = await python(OFFLINE, bundleDir, "--python", "/bin/echo", "--only", "baseline");
    assert.equal(ran.code, 0, ran.stdout + ran.stderr);
    const echoed = await Deno.readTextFile(join(bundleDir, "phases/baseline/stdout.log"));
    assert.ok(echoed.startsWith("-m torch.distributed.run --standalone"), echoed);
    assert.ok(echoed.includes(`${PROJECT}/adapters/deepspeed/train_moe.py`), echoed);
    assert.ok(echoed.includes(`${bundleDir}/phases/baseline/metrics.jsonl`), echoed);
    assert.match(ran.stdout, /^offline: .*python \/bin\/echo$/m);

    const bad = await python(OFFLINE, join(dir, "nothing-here"));
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /bundle\.json: no such file/);
    const again = await runCli([
      "plan",
      "experiments/deepspeed/gpu_autoep_seed.yaml",
      "--bundle",
      bundleDir,
    ]);
    assert.equal(again.code, 2, "a used bundle folder is refused");
    assert.match(again.stderr, /not empty/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const VENV_PYTHON = join(PROJECT, ".venv-deepspeed/bin/python");
const noVenv = !existsSync(VENV_PYTHON) && Deno.env.get("CI") !== "true";
if (noVenv) console.error(`offline bundle tests: no ${VENV_PYTHON}; the gpu_check test is ignored`);

Deno.test({
  name:
    "gpu_check --export / --offline / --import: wheels in the bundle, one line per phase and comparison",
  ignore: noVenv,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "parity-offline-" });
    const gpuCheck = async (...args: string[]) => {
      const out = await new Deno.Command("bash", {
        args: [join(PROJECT, "tools/gpu_check.sh"), ...args, "--results", join(dir, "results")],
        cwd: PROJECT,
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      }).output();
      const dec = new TextDecoder();
      return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
    };
    try {
      const bundleDir = join(dir, "gpu-bundle");
      const exported = await gpuCheck("--export", bundleDir, "--world-size", "2");
      assert.equal(exported.code, 0, exported.stdout + exported.stderr);
      const bundle: Bundle = JSON.parse(await Deno.readTextFile(join(bundleDir, "bundle.json")));
      assert.ok(bundle.sets.includes("trainer.args.world_size=2"), JSON.stringify(bundle.sets));
      assert.ok(
        bundle.wheels.some((w) => /^wheels\/deepspeed-0\.19\.8-py3-none-any\.whl$/.test(w)),
      );
      assert.ok(
        bundle.wheels.some((w) => /^wheels\/parity_hooks-0\.1\.0-py3-none-any\.whl$/.test(w)),
        `the training script's parity_hooks travels: ${bundle.wheels.join(", ")}`,
      );
      let bytes = 0;
      for await (const e of Deno.readDir(join(bundleDir, "wheels"))) {
        bytes += (await Deno.stat(join(bundleDir, "wheels", e.name))).size;
      }
      assert.ok(bytes < 64 * 1024 ** 2, `${bytes} bytes of wheels travel`);

      // This machine has no CUDA: every phase fails there, and the lines say so.
      const offline = await gpuCheck("--offline", bundleDir);
      assert.equal(offline.code, 3, offline.stdout + offline.stderr);
      assert.match(
        offline.stdout,
        /^offline: deepspeed: (installed from the bundle|the target's python has it)/m,
      );
      assert.match(
        offline.stdout,
        /^offline: parity_hooks: (installed from the bundle|the target's python has it)/m,
      );
      assert.match(
        offline.stdout,
        /^phase 1\/6 baseline \.\.\. failed in [\d.]+ s \(exit code \d+\)$/m,
      );
      assert.match(offline.stdout, /^phase 3\/6 resume-native \.\.\. skipped/m);

      const judged = await gpuCheck("--import", bundleDir);
      assert.equal(judged.code, 3, judged.stdout + judged.stderr);
      assert.match(judged.stdout, /^gpu_check: baseline~resume-native: ERROR \(exact\)$/m);
      const summary = await latestSummary(join(dir, "results"), "deepspeed-gpu-autoep-seed");
      assert.equal(summary.phases.find((p) => p.name === "baseline")!.status, "failed");
      assert.ok(summary.phases.every((p) => !p.cached), "nothing reused: nothing ran ok");
      const where = summary.diagnostics.find((d) => d.code === "ran-offline")?.message ?? "";
      assert.match(
        where,
        /ran offline on \S+ \(python 3\.\d+\.\d+, torch /,
        "the box's own python, probed",
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/**
 * Whether process `pid` is gone (or a zombie: killed, waiting for a reaper this container's
 * PID 1 may never be) within `ms`; a signalled process ends asynchronously.
 */
async function _ends(pid: number, ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until;) {
    let state: string;
    try {
      state = (await Deno.readTextFile(`/proc/${pid}/stat`)).replace(/^.*\) /s, "")[0];
    } catch {
      return true;
    }
    if (state === "Z" || state === "X") return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

Deno.test("gpu_h200.sh --dry-run: the H200 run's four members are valid plans of one file", async () => {
  const out = await new Deno.Command("bash", {
    args: [join(PROJECT, "tools/gpu_h200.sh"), "--dry-run"],
    cwd: PROJECT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const members = [...text.matchAll(/^experiment (\S+): (\d+) phases/gm)].map((m) => [m[1], m[2]]);
  // The members the docs' GPU table reports, with their phases (docs/deepspeed.md).
  assert.deepEqual(members, [
    ["deepspeed-gpu-h200-seed", "7"],
    ["deepspeed-gpu-h200-zero3-adamw", "6"],
    ["deepspeed-gpu-h200-zero1", "5"],
    ["deepspeed-gpu-h200-zero2", "5"],
  ]);
});

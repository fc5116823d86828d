/**
 * Environment errors are ERROR (exit 3) in one sentence, never a stack trace or the exit 1 that
 * means FAIL: a results "folder" that is a file, names too long for the filesystem, an empty
 * program name (a validation error, exit 2).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { pathExists } from "../src/pipeline/store/run_store.ts";
import { denoCommand, runCli, writeExperiment } from "./_testing/cli_harness.ts";

function touchExperiment(marker: string, name = "env-error") {
  return {
    name,
    schedule: { steps: 4, save_at: 2 },
    trainer: { command: ["touch", marker] },
    resume: { native: { from: "native" } },
  };
}

Deno.test("run: a results folder that is a file is ERROR in one sentence", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const marker = join(dir, "launched");
    const file = await writeExperiment(dir, "x.yaml", touchExperiment(marker));
    const results = join(dir, "results");
    await Deno.writeTextFile(results, "a file\n");
    const run = await runCli(["run", file, "--results", results]);
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /parity run: ERROR: the results folder .* is not a folder/);
    assert.ok(!run.stderr.includes("    at "), "no stack trace");
    assert.equal(await pathExists(marker), false, "nothing was launched");
    // A folder below a file: ENOTDIR, also one sentence.
    const below = await runCli(["run", file, "--results", join(results, "sub")]);
    assert.equal(below.code, 3, below.stderr);
    assert.match(below.stderr, /parity run: ERROR: the results folder .* cannot be/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run: names too long for the filesystem are refused before anything runs", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const marker = join(dir, "launched");
    const longResume = touchExperiment(marker);
    longResume.resume = { ["r".repeat(300)]: { from: "native" } } as typeof longResume.resume;
    const cases = [
      touchExperiment(marker, "e".repeat(300)),
      longResume,
      {
        ...touchExperiment(marker),
        compare: [{ name: "c".repeat(300), a: "baseline", b: "resume-native" }],
      },
    ];
    for (const [i, experiment] of cases.entries()) {
      const file = await writeExperiment(dir, `long${i}.yaml`, experiment);
      const run = await runCli(["run", file, "--results", join(dir, "results")]);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /expected at most \d+ characters/);
    }
    assert.equal(await pathExists(marker), false, "nothing was launched");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run: a results path too long for the filesystem is ERROR before any phase", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const marker = join(dir, "launched");
    const file = await writeExperiment(dir, "x.yaml", touchExperiment(marker));
    let results = dir;
    // Build a real, deep folder so only the total length is the problem.
    while (results.length < 3900) results = join(results, "d".repeat(200));
    await Deno.mkdir(results, { recursive: true });
    const run = await runCli(["run", file, "--results", results]);
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /would exceed 4096 bytes/);
    assert.equal(await pathExists(marker), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run: a filesystem error during the run is ERROR in one sentence, no stack", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const marker = join(dir, "launched");
    const file = await writeExperiment(dir, "x.yaml", touchExperiment(marker));
    const results = join(dir, "results");
    await Deno.mkdir(results);
    // The experiment's own folder is a file: the run cannot create its lock or run folder.
    await Deno.writeTextFile(join(results, "env-error"), "in the way\n");
    const run = await runCli(["run", file, "--results", results]);
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /^parity run: ERROR: .*env-error/m);
    assert.ok(!run.stderr.includes("    at "), `no stack trace: ${run.stderr}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run: a write failing after the verdict leaves summary.json ERROR, exit 3, no *.tmp", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await writeExperiment(dir, "x.yaml", {
      name: "late-failure",
      schedule: { steps: 4, save_at: 2 },
      trainer: { command: denoCommand("echo_trainer.ts", "late-failure-marker"), timeout: 120 },
      resume: { native: { from: "native" } },
    });
    const results = join(dir, "results");
    // history.csv cannot be appended to: it is a folder.
    await Deno.mkdir(join(results, "history.csv", "x"), { recursive: true });
    const run = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /^parity run: ERROR: .*history\.csv/m);
    assert.ok(!run.stderr.includes("    at "), "no stack trace");
    const runs = [...Deno.readDirSync(join(results, "late-failure"))]
      .filter((e) => e.isDirectory).map((e) => e.name);
    const summary = JSON.parse(
      await Deno.readTextFile(join(results, "late-failure", runs[0], "summary.json")),
    );
    assert.equal(summary.verdict, "ERROR");
    assert.ok(summary.diagnostics.some((d: { code: string }) => d.code === "reports-not-written"));
    const leftovers: string[] = [];
    const walk = (d: string) => {
      for (const e of Deno.readDirSync(d)) {
        if (e.isDirectory) walk(join(d, e.name));
        else if (e.name.endsWith(".tmp")) leftovers.push(join(d, e.name));
      }
    };
    walk(results);
    assert.deepEqual(leftovers, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

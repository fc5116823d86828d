/**
 * examples/python_trainer/: the minimal standard-library Python trainer and its experiment file,
 * run through the real CLI as the README tells a new user to. Also the console conventions a
 * user of their own trainer meets: verdict and report path on stdout, progress on stderr (one
 * line per short phase), "cached" said, the reason of an ERROR on the console, relative trainer
 * paths resolved against the experiment file's folder, and a warning for a missing
 * `checkpoint_marker`.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { latestSummary, PROJECT, runCli } from "./_testing/cli_harness.ts";

const EXAMPLE = join(PROJECT, "examples/python_trainer");
const FILE = join(EXAMPLE, "experiment.yaml");

/** stdout's last line: `<VERDICT> python-trainer in <duration> (<phases>)…: <path>/report.md`. */
function verdictLine(stdout: string): string {
  return stdout.trim().split("\n").at(-1) ?? "";
}

Deno.test("examples/python_trainer passes, is cached the second time, and catches its fault", async () => {
  const results = await Deno.makeTempDir({ prefix: "parity_py_" });
  try {
    const first = await runCli(["run", FILE, "--results", results]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(
      verdictLine(first.stdout),
      /^PASS python-trainer in \d+\.\d\u00a0s \(3 phases\): .*\/report\.md$/,
    );
    assert.equal(first.stdout.trim().split("\n").length, 1, "stdout holds the verdict line only");
    assert.doesNotMatch(first.stdout, /\[phase|^phase /m, "no progress on stdout");
    // Off a terminal a short phase is one line: its end.
    for (const phase of ["baseline", "split", "resume-native"]) {
      const lines = first.stderr.split("\n").filter((l) =>
        l.startsWith(`phase ${phase} `) || l.includes(`] ${phase} `)
      );
      assert.ok(lines.length >= 1 && lines.length <= 11, `${phase}: ${lines.join(" / ")}`);
      assert.match(lines.at(-1)!, new RegExp(`^phase ${phase} ok in \\d+\\.\\d\\u00a0s$`));
    }
    assert.doesNotMatch(first.stderr, /warning: trainer\.checkpoint_marker/, "it names its marker");

    const again = await runCli(["run", FILE, "--results", results]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      verdictLine(again.stdout),
      /^PASS python-trainer in .* \(3 phases, all cached\): /,
    );

    const fault = await runCli([
      "run",
      FILE,
      "--results",
      results,
      "--set",
      "resume.native.args.fault=forget-momentum",
    ]);
    assert.equal(fault.code, 1, fault.stderr);
    assert.match(fault.stdout, /^FAIL \[cause-state-not-restored\] The resume diverges: /m);
    assert.match(
      verdictLine(fault.stdout),
      /^FAIL python-trainer in .* \(3 phases, 2 cached\) — baseline~resume-native FAIL, first divergent step 17; state check names momentum: /,
    );
    const summary = await latestSummary(results, "python-trainer");
    assert.deepEqual(summary.state_checks.map((s) => s.differing), [["momentum"]]);
  } finally {
    await Deno.remove(results, { recursive: true });
  }
});

Deno.test("an ERROR says why on the console: the example's 4-decimal log line read as metrics", async () => {
  const results = await Deno.makeTempDir({ prefix: "parity_py_" });
  try {
    const run = await runCli([
      "run",
      FILE,
      "--results",
      results,
      "--set",
      "trainer.metrics={format: log, path: '${run_dir}/stdout.log', " +
      "pattern: 'step (?<step>\\d+) loss (?<loss>[-+0-9.eE]+)'}",
    ]);
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stdout, /^ERROR baseline~resume-native: Metrics are rounded/m);
    assert.match(
      verdictLine(run.stdout),
      /^ERROR python-trainer in .* — baseline~resume-native: Metrics are rounded .*identical: .*report\.md$/,
    );
  } finally {
    await Deno.remove(results, { recursive: true });
  }
});

Deno.test("a relative trainer path resolves against the experiment file; no marker is a warning", async () => {
  const dir = await Deno.makeTempDir({ prefix: "parity_py_" });
  try {
    // The experiment elsewhere than the working folder (the CLI runs in the repository root).
    await Deno.copyFile(join(EXAMPLE, "train.py"), join(dir, "train.py"));
    const text = (await Deno.readTextFile(FILE)).replace(/^ {2}checkpoint_marker: .*\n/m, "");
    await Deno.writeTextFile(join(dir, "experiment.yaml"), text);
    const results = join(dir, "results");
    const run = await runCli(["run", join(dir, "experiment.yaml"), "--results", results]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /^warning: trainer\.checkpoint_marker is not set, so a split /m);
    const summary = await latestSummary(results, "python-trainer");
    const warning = summary.diagnostics.find((d) => d.code === "no-checkpoint-marker");
    assert.equal(warning?.level, "warning");
    assert.equal(warning?.phase, "split");
    const report = await Deno.readTextFile(join(results, "python-trainer", "latest", "report.md"));
    assert.match(report, /no-checkpoint-marker/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("${python} runs the example under trainer.args.venv (a real venv, issue 34)", async () => {
  const results = await Deno.makeTempDir({ prefix: "parity_py_venv_" });
  try {
    const venv = join(results, "venv-x");
    const made = await new Deno.Command("python3", { args: ["-m", "venv", "--without-pip", venv] })
      .output();
    assert.equal(made.code, 0, new TextDecoder().decode(made.stderr));
    const run = await runCli([
      "run",
      FILE,
      "--results",
      results,
      "--set",
      "trainer.command[0]=${python}",
      "--set",
      `trainer.args.venv=${venv}`,
    ]);
    assert.equal(run.code, 0, run.stderr);
    const runDir = await Deno.realPath(join(results, "python-trainer", "latest"));
    const manifest = JSON.parse(await Deno.readTextFile(join(runDir, "manifest.json")));
    for (const child of manifest.children) {
      assert.equal(child.argv[0], join(venv, "bin", "python"), child.phase);
    }
  } finally {
    await Deno.remove(results, { recursive: true });
  }
});

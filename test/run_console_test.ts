/**
 * What `parity run` tells the person at the console (issue 34): report paths as the results
 * folder was given (an absolute `--results` stays absolute), "last run" comparisons only against
 * a run of the same resolved configuration, named, and no Deno "Initialize …" lines on a first
 * run.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { PROJECT, runCli } from "./_testing/cli_harness.ts";

const QUICKSTART = "experiments/quickstart.yaml";

/** stdout's last line. */
function lastLine(stdout: string): string {
  return stdout.trim().split("\n").at(-1) ?? "";
}

Deno.test("parity run prints the report path under --results as given, and compares with the last run of the same --set", async () => {
  const results = await Deno.makeTempDir({ prefix: "parity_console_" });
  try {
    const first = await runCli(["run", QUICKSTART, "--results", results]);
    assert.equal(first.code, 0, first.stderr);
    const firstId = (await Deno.readLink(join(results, "quickstart", "latest"))).split("/").at(-1)!;
    const firstDir = join(results, "quickstart", firstId);
    assert.ok(
      lastLine(first.stdout).endsWith(`: ${firstDir}/report.md`),
      `absolute stays absolute: ${lastLine(first.stdout)}`,
    );
    assert.doesNotMatch(first.stdout, /\.\.\//);
    assert.match(first.stderr, new RegExp(`-> ${firstDir.replaceAll(".", "\\.")}\\n`));
    const firstSummary = JSON.parse(await Deno.readTextFile(join(firstDir, "summary.json")));
    assert.match(firstSummary.config, /^[0-9a-f]{16}$/);

    // Other --set values: another configuration, so no "last run" to compare with.
    const other = await runCli([
      "run",
      QUICKSTART,
      "--results",
      results,
      "--set",
      "trainer.args.fault=skip-rng-restore",
    ]);
    assert.equal(other.code, 1, other.stderr);
    const otherDir = await Deno.realPath(join(results, "quickstart", "latest"));
    const otherSummary = JSON.parse(await Deno.readTextFile(join(otherDir, "summary.json")));
    assert.notEqual(otherSummary.config, firstSummary.config);
    assert.doesNotMatch(await Deno.readTextFile(join(otherDir, "report.md")), /last run/);

    // The first configuration again: compared with the first run, not the newer FAIL.
    const again = await runCli(["run", QUICKSTART, "--results", results, "--set", "seed=1234"]);
    assert.equal(again.code, 0, again.stderr);
    const againDir = await Deno.realPath(join(results, "quickstart", "latest"));
    const againSummary = JSON.parse(await Deno.readTextFile(join(againDir, "summary.json")));
    assert.equal(againSummary.config, firstSummary.config, "--set seed=1234 is the default");
    const report = await Deno.readTextFile(join(againDir, "report.md"));
    assert.match(report, new RegExp(`last run of this configuration ${firstId}: PASS`));

    // A relative --results stays relative (the CLI runs in the project folder).
    const rel = `results-console-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const relRun = await runCli(["run", QUICKSTART, "--results", `./${rel}`]);
      assert.equal(relRun.code, 0, relRun.stderr);
      assert.match(lastLine(relRun.stdout), new RegExp(`: ${rel}/quickstart/[^/]+/report\\.md$`));
    } finally {
      await Deno.remove(join(PROJECT, rel), { recursive: true }).catch(() => {});
    }
  } finally {
    await Deno.remove(results, { recursive: true });
  }
});

Deno.test("a first run prints no Deno 'Initialize' lines: the tasks' deno run is quiet, and so is deno task -q", async () => {
  // Deno's own output while it sets up node_modules/ (one line per npm package). `deno task`
  // installs before it starts the task (the harness cannot silence that: docs say `-q`); the
  // tasks' own `deno run` carries --quiet, so a run started any other way is quiet too.
  const tasks = JSON.parse(await Deno.readTextFile(join(PROJECT, "deno.json"))).tasks;
  const runArgs = (tasks.parity as string).split(" ").slice(1); // after "deno"
  assert.ok(runArgs.includes("--quiet"), tasks.parity);
  for (const args of [[...runArgs, "--version"], ["task", "-q", "parity", "--version"]]) {
    const copy = await Deno.makeTempDir({ prefix: "parity_first_run_" });
    try {
      // A checkout whose node_modules does not exist yet, as on a user's first run.
      const files = ["deno.json", "deno.lock", "src"].map((f) => join(PROJECT, f));
      const cp = await new Deno.Command("cp", { args: ["-r", ...files, copy] }).output();
      assert.equal(cp.code, 0, new TextDecoder().decode(cp.stderr));
      const out = await new Deno.Command(Deno.execPath(), {
        args,
        cwd: copy,
        env: { NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, stderr);
      assert.match(new TextDecoder().decode(out.stdout), /^parity \d+\.\d+\.\d+/);
      assert.ok((await Deno.stat(join(copy, "node_modules"))).isDirectory, "it did set them up");
      assert.equal(stderr, "", `deno ${args.join(" ")}`);
    } finally {
      await Deno.remove(copy, { recursive: true });
    }
  }
});

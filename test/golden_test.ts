/**
 * Goldens per environment, end to end: no golden yet (ABSTAIN, exit 4), `golden save`, a match
 * (PASS, exact), and a deliberately changed learning rate (FAIL at step 1), with the golden
 * comparison in summary.json, report.md and history.csv.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { RunSummary } from "../src/types/summary.ts";
import { fixtureTrainer, latestSummary, runCli, writeExperiment } from "./_testing/cli_harness.ts";

Deno.test("golden: none yet, save, match, and a changed LR", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const trainer = fixtureTrainer("rng_trainer.ts");
    const file = await writeExperiment(dir, "golden.yaml", {
      name: "goldie",
      golden: true,
      schedule: { steps: 6, save_at: 3 },
      trainer: {
        command: [Deno.execPath(), "run", "-A", "--quiet", trainer],
        env: { LR: "0.01" },
        code_inputs: [trainer],
        timeout: 60,
      },
      resume: { native: { from: "native" } },
    });
    const results = join(dir, "results");
    const goldens = join(dir, "goldens");
    const run = (...extra: string[]) =>
      runCli(["run", file, "--results", results, "--goldens", goldens, "--quiet", ...extra]);
    const golden = (s: RunSummary) => s.comparisons.find((c) => c.name === "golden~baseline")!;

    // No golden for this environment: ABSTAIN with the key and the command that saves one.
    const first = await run();
    assert.equal(first.code, 4, first.stderr);
    const abstained = await latestSummary(results, "goldie");
    assert.equal(abstained.golden?.verdict, "ABSTAIN");
    assert.equal(abstained.golden?.found, false);
    assert.match(abstained.golden!.reason, /no golden for environment \S+.*golden save/);
    assert.equal(golden(abstained).verdict, "ABSTAIN");
    assert.equal(abstained.comparisons.find((c) => c.name !== "golden~baseline")?.verdict, "PASS");

    const save = await runCli([
      "golden",
      "save",
      join(results, "goldie", "latest"),
      "--goldens",
      goldens,
    ]);
    assert.equal(save.code, 0, save.stderr);
    const key = abstained.golden!.environment_key;
    assert.match(key, /^(cpu|gpu)-[a-z0-9_-]+\.code-[0-9a-f]{12}\.fw-[0-9a-f]{8}$/);
    const stored = await Deno.readTextFile(join(goldens, "goldie", `${key}.jsonl`));
    assert.equal(stored.trim().split("\n").length, 7, "header + 6 steps");

    // Same environment: exact, PASS.
    const second = await run();
    assert.equal(second.code, 0, second.stderr);
    const matched = await latestSummary(results, "goldie");
    assert.equal(matched.golden?.verdict, "PASS");
    assert.equal(matched.golden?.lane, "exact");
    assert.equal(golden(matched).compared, 6);

    // A changed learning rate: the baseline no longer matches its golden.
    const third = await run("--set", 'trainer.env.LR="0.02"');
    assert.equal(third.code, 1, third.stderr);
    const changed = await latestSummary(results, "goldie");
    assert.equal(changed.golden?.verdict, "FAIL");
    assert.equal(golden(changed).first_divergent_step, 1);
    assert.equal(changed.comparisons.find((c) => c.name !== "golden~baseline")?.verdict, "PASS");

    const report = await Deno.readTextFile(join(results, "goldie", "latest", "report.md"));
    assert.match(report, /golden~baseline/);
    assert.match(report, /Golden: FAIL/);
    const history = await Deno.readTextFile(join(results, "history.csv"));
    const rows = history.split("\n").filter((l) => l.includes("golden~baseline"));
    assert.deepEqual(
      rows.map((r) => /,(PASS|FAIL|ABSTAIN|ERROR),/.exec(r.split(",golden~baseline,")[1])?.[1]),
      [
        "ABSTAIN",
        "PASS",
        "FAIL",
      ],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

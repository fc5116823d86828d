/**
 * External-trainer patterns end to end: each run ends with a root-cause card whose first lines
 * (report.md, the console's last lines, junit.xml) say what happened and what to try, under a
 * documented code (docs/parity.md, "Root-cause codes").
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { RunSummary } from "../src/types/summary.ts";
import {
  denoCommand,
  latestSummary,
  PROJECT,
  runCli,
  writeExperiment,
} from "./_testing/cli_harness.ts";

const NOISY = join(PROJECT, "test/trainers/noisy_trainer.ts");
const noisy = (...flags: string[]) => [Deno.execPath(), "run", "-A", "--quiet", NOISY, ...flags];

async function runExperiment(name: string, experiment: Record<string, unknown>) {
  const dir = await Deno.makeTempDir();
  const file = await writeExperiment(dir, `${name}.yaml`, { name, ...experiment });
  const results = join(dir, "results");
  const run = await runCli(["run", file, "--results", results, "--quiet"]);
  const summary: RunSummary = await latestSummary(results, name);
  const report = await Deno.readTextFile(join(results, name, "latest", "report.md"));
  const junit = await Deno.readTextFile(join(results, name, "latest", "junit.xml"));
  return { dir, run, summary, report, junit };
}

/** The report's first card line (the line after the verdict and the marker). */
function firstCardLine(report: string): string {
  return report.split("\n")[3] ?? "";
}

Deno.test("root cause: a nondeterministic trainer without a noise floor is told to add one", async () => {
  const r = await runExperiment("nondeterministic", {
    schedule: { steps: 12, save_at: 6 },
    trainer: { command: noisy() },
    resume: { native: { from: "native" } },
  });
  try {
    assert.equal(r.run.code, 1, r.run.stderr);
    assert.equal(r.summary.findings?.[0].code, "cause-nondeterministic");
    assert.match(firstCardLine(r.report), /cause-nondeterministic.*few ULPs/);
    assert.match(r.report.split("\n").slice(3, 6).join("\n"), /noise\\_floor: \{repeats: 2\}/);
    assert.match(r.run.stdout, /next: Add `noise_floor: \{repeats: 2\}`/);
    assert.match(r.junit, /<system-out>.*cause-nondeterministic/);
  } finally {
    await Deno.remove(r.dir, { recursive: true });
  }
});

Deno.test("root cause: state equal but loss off at N+1 names what runs between load and step", async () => {
  // The pitfall flag reaches the resume only, through an optional placeholder.
  const r = await runExperiment("loader-rng", {
    schedule: { steps: 12, save_at: 6 },
    trainer: { command: [...noisy("--noise", "0", "--digests"), "${args.pitfall?}"] },
    resume: { native: { from: "native", args: { pitfall: "--loader-from-rng" } } },
  });
  try {
    assert.equal(r.run.code, 1, r.run.stderr);
    const c = r.summary.comparisons[0];
    assert.equal(c.lane, "exact", "a per-resume flag is no topology");
    assert.equal(c.first_divergent_step, 7);
    assert.equal(r.summary.state_checks[0].verdict, "PASS");
    assert.equal(r.summary.findings?.[0].code, "cause-consumed-before-first-step");
    assert.match(firstCardLine(r.report), /first resumed step 7 .*digest equals the saved one/);
    assert.match(r.report, /data loader or sampler seeded from the restored global RNG/);
    assert.match(r.report, /same topology as the saved checkpoint/, "the lane says why");
  } finally {
    await Deno.remove(r.dir, { recursive: true });
  }
});

Deno.test("root cause: a crash shows the log tail on the console and names the cause last", async () => {
  const r = await runExperiment("crash", {
    schedule: { steps: 6, save_at: 3 },
    trainer: { command: denoCommand("fail_trainer.ts"), timeout: 60 },
    resume: { native: { from: "native" } },
  });
  try {
    assert.equal(r.run.code, 3, r.run.stderr);
    assert.equal(r.summary.findings?.[0].code, "cause-phase-failed");
    assert.match(r.run.stdout, /\| RuntimeError: boom: CUDA out of memory \(simulated\)/);
    const last = r.run.stdout.trim().split("\n").pop()!;
    assert.match(last, /^ERROR crash in .* — phase baseline failed: RuntimeError: boom: CUDA out/);
    assert.match(firstCardLine(r.report), /cause-phase-failed.*phase baseline failed/);
  } finally {
    await Deno.remove(r.dir, { recursive: true });
  }
});

Deno.test("root cause: NaN on both sides is ERROR (no evidence), not FAIL", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const trainer = join(dir, "nan_trainer.ts");
    await Deno.writeTextFile(
      trainer,
      `const file = Deno.env.get("PARITY_METRICS_FILE")!;
const stop = Number(Deno.env.get("PARITY_STOP_AT"));
const save = Deno.env.get("PARITY_SAVE_AT");
const lines = [];
for (let s = (Deno.env.get("PARITY_RESUME_FROM") ? 4 : 1); s <= stop; s++) {
  lines.push(s >= 5 ? '{"step":' + s + ',"loss":NaN}' : JSON.stringify({ step: s, loss: 1 / s }));
}
if (save) {
  const dir = Deno.env.get("PARITY_CHECKPOINT_DIR") + "/global_step" + save;
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(Deno.env.get("PARITY_CHECKPOINT_DIR") + "/latest", "global_step" + save);
}
await Deno.writeTextFile(file, lines.join("\\n") + "\\n", { append: true });
`,
    );
    const file = await writeExperiment(dir, "nan.yaml", {
      name: "nan",
      schedule: { steps: 6, save_at: 3 },
      trainer: { command: [Deno.execPath(), "run", "-A", trainer] },
      resume: { native: { from: "native" } },
    });
    const run = await runCli(["run", file, "--results", join(dir, "results"), "--quiet"]);
    const summary = await latestSummary(join(dir, "results"), "nan");
    assert.equal(summary.comparisons[0].verdict, "ERROR", summary.comparisons[0].reason);
    assert.equal(summary.comparisons[0].both_non_finite, 2);
    assert.equal(run.code, 3, run.stderr);
    assert.ok(summary.findings?.some((f) => f.code === "cause-no-evidence"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("root cause: a timeout names the phase, its last log line and the timeout to raise", async () => {
  const marker = `parity-root-cause-timeout-${Date.now()}`;
  const r = await runExperiment("timeout", {
    schedule: { steps: 6, save_at: 3 },
    trainer: { command: denoCommand("hang_trainer.ts", marker), timeout: 1.5 },
    resume: { native: { from: "native" } },
  });
  try {
    assert.equal(r.run.code, 3, r.run.stderr);
    const f = r.summary.findings?.[0];
    assert.equal(f?.code, "cause-phase-failed");
    assert.match(f?.next ?? "", /trainer\.timeout/);
    assert.match(r.run.stdout, /\| hanging with marker/);
    const last = r.run.stdout.trim().split("\n").pop()!;
    assert.match(last, /^ERROR timeout in .* — phase baseline timed out: hanging with marker/);
  } finally {
    await Deno.remove(r.dir, { recursive: true });
  }
});

Deno.test("root cause: four different resume faults in one run get four cards", async () => {
  const fault = (name: string) => ({ from: "native", args: { fault: name } });
  const r = await runExperiment("four-faults", {
    schedule: { steps: 12, save_at: 6 },
    trainer: { preset: "reference" },
    resume: {
      rng: fault("skip-rng-restore"),
      sampler: fault("skip-sampler-restore"),
      scheduler: fault("skip-scheduler-restore"),
      adam: fault("reset-adam-step"),
    },
  });
  try {
    assert.equal(r.run.code, 1, r.run.stderr);
    const cards = (r.summary.findings ?? []).map((f) => [f.code, f.state?.join(",")]);
    assert.deepEqual(cards.sort(), [
      ["cause-lr-schedule", "lr_scheduler"],
      ["cause-state-not-restored", "optimizer_step"],
      ["cause-state-not-restored", "rng"],
      ["cause-state-not-restored", "sampler"],
    ]);
    for (const f of r.summary.findings!) assert.equal(f.comparisons?.length, 1, f.title);
  } finally {
    await Deno.remove(r.dir, { recursive: true });
  }
});

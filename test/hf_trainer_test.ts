/**
 * An unmodified Hugging Face `transformers.Trainer` script under the harness: the `hf` preset
 * runs `test/trainers/hf_clm/train_clm.py` (a run_clm-style tiny GPT-2, dropout on, linear
 * schedule) through `python -m parity_hooks.hf`, with real transformers 5.22.2, accelerate and
 * DeepSpeed from `.venv-hooks/` (`deno task setup-hooks`). Each verdict is the one the evidence
 * allows: a native resume bit-identical; HF's own `--ignore_data_skip` and a Trainer whose RNG
 * restore is a no-op FAIL at N+1 naming what differs; a split that cuts the schedule short is
 * caught by the save check and the LR pre-flight; the same under DeepSpeed ZeRO-2; and from
 * HF's TensorBoard events alone (`metrics: {format: tensorboard, loss: train/loss}`), the loss
 * verdicts without the state's names. CI creates the venv first and these tests fail there
 * without it; on a machine without it they are ignored, saying why.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { RunSummary } from "../src/types/summary.ts";
import {
  failureContext,
  latestSummary,
  PROJECT,
  runCli,
  runExperiment,
  writeExperiment,
} from "./_testing/cli_harness.ts";
import { readMetrics } from "../src/metrics/mod.ts";
import { comparison, stateCheck } from "./_testing/summary_lookup.ts";
import { venvGate } from "./_testing/venv_gate.ts";

const VENV = join(PROJECT, ".venv-hooks");
const { ignore, assertVenvs: assertVenv } = venvGate("hf trainer", [VENV], "deno task setup-hooks");

const EXAMPLE = join(PROJECT, "examples/hf_trainer/experiment.yaml");
const SCRIPT = join(PROJECT, "test/trainers/hf_clm/train_clm.py");
const CORPUS = join(PROJECT, "test/fixtures/hf_clm/corpus.txt");
const DS_CONFIG = join(PROJECT, "test/fixtures/hf_clm/ds_zero2.json");
/** The script's own arguments, as the example passes them. */
const SCRIPT_ARGS = [
  "--train_file",
  CORPUS,
  "--per_device_train_batch_size",
  "4",
  "--learning_rate",
  "1e-3",
  "--use_cpu",
  "true",
  "--disable_tqdm",
  "true",
];
/** HF's TensorBoard logging, one record per optimizer step. */
const TENSORBOARD = ["--report_to", "tensorboard", "--logging_steps", "1"];

const results = await Deno.makeTempDir({ prefix: "hf-trainer-" });
globalThis.addEventListener("unload", () => Deno.removeSync(results, { recursive: true }));

/** The state components every HF phase reports (DeepSpeed adds the engine's counters). */
const HF_COMPONENTS = [
  "data",
  "exp_avg",
  "exp_avg_sq",
  "lr_scheduler",
  "optimizer_step",
  "param_groups",
  "params",
  "rng",
  "trainer_state",
];

/** Resumes with HF's own flag and with the test fault, each on top of `extra` (per phase). */
function faultResumes(extra: string[] = []): string[] {
  const list = (xs: string[]) => `[${xs.map((x) => JSON.stringify(x)).join(", ")}]`;
  return [
    `resume.ids={from: native, args: {extra_args: ${
      list([...extra, "--ignore_data_skip", "true"])
    }}}`,
    `resume.rng={from: native, args: {extra_args: ${
      list([...extra, "--skip_rng_restore", "true"])
    }}}`,
  ];
}

/** The verdicts of the two fault resumes: FAIL at N+1 = 6, naming what differs. */
function assertFaults(summary: RunSummary, withState: boolean) {
  for (
    const [phase, names] of [["resume-ids", ["data"]], ["resume-rng", ["rng"]]] as const
  ) {
    const c = comparison(summary, `baseline~${phase}`);
    assert.equal(c.verdict, "FAIL", `${phase}: ${c.reason}`);
    assert.equal(c.first_divergent_step, 6, phase);
    const s = stateCheck(summary, phase);
    if (withState) {
      assert.equal(s.verdict, "FAIL", phase);
      // --ignore_data_skip: the data restarts at the epoch's first batch; the RNG HF restored is
      // the saved one (the restarted epoch's iterator then draws from it, as a new epoch does).
      assert.deepEqual([...s.differing].sort(), [...names].sort(), phase);
    } else {
      assert.equal(s.verdict, "N/A", `${phase}: TensorBoard carries no state`);
    }
  }
}

Deno.test({
  name: "hf: an unmodified Trainer script resumes bit-identically, cached the second time",
  ignore,
  fn: async () => {
    assertVenv();
    const run = await runExperiment(EXAMPLE, results);
    assert.equal(run.code, 0, await failureContext(results, "hf-trainer"));
    const summary = await latestSummary(results, "hf-trainer");
    const native = comparison(summary, "baseline~resume-native");
    assert.equal(native.verdict, "PASS");
    assert.equal(native.max_ulp, 0, "bit-identical");
    assert.equal(native.compared, 5, "steps 6..10");
    for (
      const check of [stateCheck(summary, "split", "save"), stateCheck(summary, "resume-native")]
    ) {
      assert.equal(check.verdict, "PASS", check.reason);
      // A resume's check also compares the gradient buffers as its first step begins.
      const grads = check.check === "save" ? [] : ["grad_buffers"];
      assert.deepEqual([...(check.compared ?? [])].sort(), [...HF_COMPONENTS, ...grads].sort());
    }
    assert.ok(!summary.diagnostics?.some((d) => d.level !== "info"), "no warning, no error");
    const again = await runExperiment(EXAMPLE, results);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /\(3 phases, all cached\)/);
    // A calibration resume: the launcher scales the LR from the first resumed step (logged).
    const calibrated = await runExperiment(EXAMPLE, results, [
      "resume.native.sensitivity={lr_error: [1e-3]}",
    ]);
    assert.equal(calibrated.code, 0, calibrated.stderr);
    const sensitivity = comparison(await latestSummary(results, "hf-trainer"), native.name)
      .sensitivity;
    assert.deepEqual(
      sensitivity?.tried.map((t) => [t.verdict, t.first_divergent_step, t.applied]),
      [["FAIL", 7, true]],
    );
  },
});

Deno.test({
  name: "hf: --ignore_data_skip and a skipped RNG restore FAIL at N+1 naming what differs",
  ignore,
  fn: async () => {
    assertVenv();
    const run = await runExperiment(EXAMPLE, results, faultResumes());
    assert.equal(run.code, 1, await failureContext(results, "hf-trainer"));
    const summary = await latestSummary(results, "hf-trainer");
    assert.equal(comparison(summary, "baseline~resume-native").verdict, "PASS");
    assertFaults(summary, true);
  },
});

Deno.test({
  name: "hf: a naive --max_steps split (the schedule cut at the save) is caught",
  ignore,
  fn: async () => {
    assertVenv();
    const dir = await Deno.makeTempDir({ dir: results });
    // What a user writes without the preset: the launcher, but --max_steps is the phase's stop.
    const file = await writeExperiment(dir, "naive.yaml", {
      name: "hf-naive-split",
      schedule: { steps: 10, save_at: 5 },
      trainer: {
        command: [
          join(VENV, "bin/python"),
          "-m",
          "parity_hooks.hf",
          SCRIPT,
          ...SCRIPT_ARGS,
          "--seed",
          "${seed}",
          "--max_steps",
          "${stop_at}",
          "--output_dir",
          "${run_dir}/checkpoints",
          "--resume_from_checkpoint=${resume_from?}",
        ],
        checkpoint_tag: "checkpoint-${save_at}",
        checkpoint_marker: "parity_checkpoint_complete.json",
        timeout: 300,
      },
      resume: { native: { from: "native" } },
    });
    const run = await runExperiment(file, results);
    assert.equal(run.code, 1, await failureContext(results, "hf-naive-split"));
    const summary = await latestSummary(results, "hf-naive-split");
    const save = stateCheck(summary, "split", "save");
    assert.equal(save.verdict, "FAIL");
    for (const component of ["lr_scheduler", "params"]) {
      assert.ok(save.differing.includes(component), `${component}: ${save.differing}`);
    }
    assert.ok(summary.diagnostics?.some((d) => d.code === "lr-schedule-mismatch"));
    assert.ok(summary.findings?.some((f) => f.code === "cause-save-differs"));
  },
});

Deno.test({
  name:
    "hf: under --deepspeed ZeRO-2 (one CPU rank) the native resume passes and the RNG fault FAILs",
  ignore,
  fn: async () => {
    assertVenv();
    const run = await runExperiment(EXAMPLE, results, [
      "name=hf-deepspeed",
      `trainer.args.deepspeed=${DS_CONFIG}`,
      faultResumes()[1],
    ]);
    assert.equal(run.code, 1, await failureContext(results, "hf-deepspeed"));
    const summary = await latestSummary(results, "hf-deepspeed");
    const native = comparison(summary, "baseline~resume-native");
    assert.equal(native.verdict, "PASS", native.reason);
    assert.equal(native.max_ulp, 0);
    for (
      const check of [stateCheck(summary, "split", "save"), stateCheck(summary, "resume-native")]
    ) {
      assert.equal(check.verdict, "PASS", check.reason);
      // The engine's state, gathered: its counters too (and a resume's gradient buffers).
      const grads = check.check === "save" ? [] : ["grad_buffers"];
      assert.deepEqual(
        [...(check.compared ?? [])].sort(),
        [...HF_COMPONENTS, "engine_counters", ...grads].sort(),
      );
    }
    const rng = comparison(summary, "baseline~resume-rng");
    assert.equal(rng.verdict, "FAIL");
    assert.equal(rng.first_divergent_step, 6);
    assert.deepEqual(stateCheck(summary, "resume-rng").differing, ["rng"]);
  },
});

Deno.test({
  name: "hf: from TensorBoard alone, train/loss gives the same loss verdicts (no state names)",
  ignore,
  fn: async () => {
    assertVenv();
    const tensorboard = [
      "name=hf-tensorboard",
      `trainer.args.extra_args=[${TENSORBOARD.map((x) => JSON.stringify(x)).join(", ")}]`,
    ];
    // HF writes train/loss and train/train_loss: the alias rule takes neither, and says why.
    const ambiguous = await runExperiment(EXAMPLE, results, [
      ...tensorboard,
      "trainer.metrics={format: tensorboard, path: '${run_dir}/tensorboard'}",
    ]);
    assert.equal(ambiguous.code, 3, ambiguous.stdout);
    const first = await latestSummary(results, "hf-tensorboard");
    const finding = first.diagnostics?.find((d) => d.code === "metrics-loss-ambiguous");
    assert.deepEqual(finding?.loss_alias, {
      rule: "ambiguous",
      candidates: ["train/loss", "train/train_loss"],
    });
    assert.match(
      comparison(first, "baseline~resume-native").reason ?? "",
      /does not report loss \(several metrics could be it: train\/loss, train\/train_loss; name one with metrics\.loss\)/,
    );

    const named = [
      ...tensorboard,
      "trainer.metrics={format: tensorboard, path: '${run_dir}/tensorboard', loss: train/loss}",
    ];
    const run = await runExperiment(EXAMPLE, results, [...named, ...faultResumes(TENSORBOARD)]);
    assert.equal(run.code, 1, await failureContext(results, "hf-tensorboard"));
    const summary = await latestSummary(results, "hf-tensorboard");
    assert.match(run.stderr + run.stdout, /5 phases, 3 cached/, "TensorBoard phases are reused");
    const native = comparison(summary, "baseline~resume-native");
    assert.equal(native.verdict, "PASS");
    assert.equal(native.max_ulp, 0);
    assertFaults(summary, false);
    // HF logs each step's loss as a float32 scalar; with logging_steps 1 it is the very value the
    // launcher logs at full precision, so TensorBoard loses nothing here — but only the state
    // digests of the JSONL can name a component.
    const phase = join(results, "hf-tensorboard", "latest", "phases", "baseline");
    const tb = await readMetrics(join(phase, "tensorboard"), {
      format: "tensorboard",
      loss: "train/loss",
    });
    const jsonl = await readMetrics(join(phase, "metrics.jsonl"));
    assert.deepEqual([...tb.values.loss], [...jsonl.values.loss]);
    const reuse = await runExperiment(EXAMPLE, results, named);
    assert.equal(reuse.code, 0, reuse.stderr);
    assert.match(reuse.stdout, /\(3 phases, all cached\)/);
  },
});

Deno.test({
  name: "hf: without its venv the preset says how to make it (exit 3, nothing launched)",
  fn: async () => {
    const run = await runCli(["run", EXAMPLE, "--results", results, "--quiet"], {
      PARITY_HOOKS_VENV: join(results, "no-such-venv"),
    });
    assert.equal(run.code, 3, run.stdout + run.stderr);
    assert.match(run.stdout + run.stderr, /deno task setup-hooks/);
  },
});

/**
 * The parity_hooks package end to end: its pytest suite, and the three examples of "Bring your own
 * trainer" through `parity run` — a hand-written PyTorch loop (`parity_hooks.torch`), a
 * LightningModule (`parity_hooks.lightning`) and a user's own DeepSpeed script
 * (`parity_hooks.deepspeed`). Each passes clean (a bit-identical native resume, digests equal)
 * and FAILs its injected fault naming the state component. Needs `.venv-hooks/`
 * (`deno task setup-hooks`): CI creates it first and these tests fail there without it; on a
 * machine without it they are ignored, saying why.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { failureContext, latestSummary, PROJECT, runExperiment } from "./_testing/cli_harness.ts";
import { runPytest, venvGate } from "./_testing/venv_gate.ts";

const VENV = join(PROJECT, ".venv-hooks");
const { ignore, assertVenvs: assertVenv } = venvGate(
  "parity_hooks",
  [VENV],
  "deno task setup-hooks",
);

Deno.test({
  name: "parity_hooks: the package's pytest suite passes against the real libraries",
  ignore,
  async fn() {
    assertVenv();
    await runPytest(
      join(VENV, "bin/python"),
      join(PROJECT, "hooks/tests"),
      PROJECT,
      join(VENV, "torch_extensions"),
    );
  },
});

/** An example, its experiment name, its fault and the components the fault's state check names. */
const EXAMPLES = [
  {
    dir: "torch_loop",
    name: "hooks-torch-loop",
    fault: "forget-optimizer",
    differing: ["exp_avg", "exp_avg_sq", "optimizer_step", "param_groups"],
  },
  {
    dir: "lightning",
    name: "hooks-lightning",
    fault: "restart-schedule",
    differing: ["lr_scheduler"],
  },
  {
    dir: "deepspeed_script",
    name: "hooks-deepspeed-script",
    fault: "no-optimizer-states",
    // DeepSpeed rebuilds the fp32 masters from the bf16 weights without optimizer states.
    differing: ["exp_avg", "exp_avg_sq", "optimizer_step", "param_groups", "params"],
  },
];

for (const example of EXAMPLES) {
  Deno.test({
    name: `examples/${example.dir}: PASS clean, and --fault ${example.fault} FAILs naming it`,
    ignore,
    async fn() {
      assertVenv();
      const results = await Deno.makeTempDir({ prefix: `hooks-${example.dir}-` });
      try {
        const file = join(PROJECT, "examples", example.dir, "experiment.yaml");
        const clean = await runExperiment(file, results);
        const context = async () => await failureContext(results, example.name);
        assert.equal(clean.code, 0, `${clean.stdout}${clean.stderr}\n${await context()}`);
        const pass = await latestSummary(results, example.name);
        const native = pass.comparisons.find((c) => c.name === "baseline~resume-native");
        assert.equal(native?.verdict, "PASS");
        assert.equal(native?.lane, "exact", "bit-identical native resume");
        const restore = pass.state_checks.find((s) => s.phase === "resume-native" && !s.check);
        assert.equal(restore?.verdict, "PASS", JSON.stringify(restore));
        const save = pass.state_checks.find((s) => s.check === "save");
        assert.equal(save?.verdict, "PASS", `the save check runs: ${JSON.stringify(save)}`);
        if (example.dir === "deepspeed_script") {
          // checkpoint_format: deepspeed: the harness read the tag folder back and compared it.
          for (const c of ["params", "exp_avg", "exp_avg_sq", "module_weights"]) {
            assert.ok(save?.files_compared?.includes(c), `${c}: ${save?.reason}`);
          }
        }
        assert.ok(
          restore?.compared?.includes("grad_buffers"),
          `the gradient buffers at the first resumed step are compared: ${JSON.stringify(restore)}`,
        );

        const faulty = await runExperiment(file, results, [
          `resume.native.args.fault=${example.fault}`,
        ]);
        assert.equal(faulty.code, 1, `${faulty.stdout}${faulty.stderr}\n${await context()}`);
        const fail = await latestSummary(results, example.name);
        const check = fail.state_checks.find((s) => s.phase === "resume-native" && !s.check);
        assert.equal(check?.verdict, "FAIL");
        assert.deepEqual([...check!.differing].sort(), example.differing);
        const phases = fail.phases.filter((p) => p.cached).map((p) => p.name).sort();
        assert.deepEqual(phases, ["baseline", "split"], "the fault re-runs the resume only");
      } finally {
        await Deno.remove(results, { recursive: true });
      }
    },
  });
}

Deno.test({
  name:
    "examples/torch_loop: a loop that forgets zero_grad FAILs at save_at + 2 with cause-grad-carryover",
  ignore,
  async fn() {
    assertVenv();
    const results = await Deno.makeTempDir({ prefix: "hooks-torch-loop-grads-" });
    try {
      const file = join(PROJECT, "examples/torch_loop/experiment.yaml");
      // Every phase has the bug (it is the loop's): the baseline carries gradients, a resume not.
      const run = await runExperiment(file, results, ["trainer.args.fault=forget-zero-grad"]);
      const context = async () => await failureContext(results, "hooks-torch-loop");
      assert.equal(run.code, 1, `${run.stdout}${run.stderr}\n${await context()}`);
      const fail = await latestSummary(results, "hooks-torch-loop");
      const check = fail.state_checks.find((s) => s.phase === "resume-native" && !s.check);
      assert.equal(check?.verdict, "FAIL", JSON.stringify(check));
      assert.deepEqual(
        check!.differing,
        ["grad_buffers"],
        "everything the checkpoint holds is restored",
      );
      assert.ok(check!.differing_tensors?.includes("0.weight · grad"), JSON.stringify(check));
      const save = fail.state_checks.find((s) => s.check === "save");
      assert.equal(save?.verdict, "PASS", "the save holds the uninterrupted run's state");
      const native = fail.comparisons.find((c) => c.name === "baseline~resume-native");
      // save_at 6: step 7's forward is the same, its update is not.
      assert.equal(native?.verdict, "FAIL");
      assert.equal(native?.first_divergent_step, 8);
      const card = fail.findings?.[0];
      assert.equal(card?.code, "cause-grad-carryover", JSON.stringify(fail.findings));
      assert.deepEqual(card?.state, ["grad_buffers"]);
      assert.match(
        card!.title,
        /carried gradients into the next step that a fresh process does not have/,
      );
      // The report and JUnit show the component and the card.
      const latest = join(results, "hooks-torch-loop", "latest");
      assert.match(await Deno.readTextFile(join(latest, "junit.xml")), /grad_buffers/);
      const report = await Deno.readTextFile(join(latest, "report.md"));
      assert.match(report, /cause-grad-carryover/);
      assert.match(report, /grad\\_buffers \(the gradients carried into the first resumed step\)/);
    } finally {
      await Deno.remove(results, { recursive: true });
    }
  },
});

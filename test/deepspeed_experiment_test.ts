/**
 * Real DeepSpeed under the harness: the CPU AutoEP experiment for ZeRO 1, 2 and 3 and its fault
 * table, each through `parity run` with the `deepspeed` preset (torchrun over gloo,
 * `ds_to_universal`, the AutoEP planner), and the adapter's own Python tests. Needs
 * `.venv-deepspeed/` (`deno task setup-deepspeed`): CI creates it first and these tests fail
 * there without it; on a machine without it they are ignored, saying why.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { PlanSyncSummary, RunSummary } from "../src/types/summary.ts";
import {
  failureContext,
  latestSummary,
  PROJECT,
  runCli,
  runExperiment,
  TEN_RESUMED_STEPS,
} from "./_testing/cli_harness.ts";
import { assertSlurmReachable, SLURM, SLURM_IGNORE } from "./_testing/slurm_cluster.ts";
import { comparison, stateCheck } from "./_testing/summary_lookup.ts";
import { runPytest, venvGate } from "./_testing/venv_gate.ts";

const VENV = join(PROJECT, ".venv-deepspeed");
const { ignore, assertVenvs: assertVenv } = venvGate(
  "deepspeed",
  [VENV],
  "deno task setup-deepspeed",
);

const results = await Deno.makeTempDir({ prefix: "deepspeed-" });
globalThis.addEventListener("unload", () => Deno.removeSync(results, { recursive: true }));

/** A clean plan of DeepSpeed's planner: named, verified, every process planned and executed. */
function assertDeepSpeedPlan(plan: PlanSyncSummary, processes: number, where: string) {
  const at = `${where} ${plan.policy}`;
  assert.equal(plan.planner?.name, "deepspeed.checkpoint.affine_transfer", at);
  assert.equal(plan.planner?.version, "0.19.8", at);
  assert.equal(plan.planner?.api, "plan_transfer + replica_selector", at);
  assert.ok(plan.verified, `${at}: ${plan.error}`);
  assert.ok(plan.moved_bytes > 0, at);
  assert.equal(Object.keys(plan.per_process ?? {}).length, processes, `${at}: every process`);
  assert.equal(plan.second_opinion?.available, true, at);
  const ex = plan.execution;
  assert.equal(ex?.verdict, "PASS", `${at}: ${ex?.reason}`);
  assert.deepEqual(ex?.kinds, ["module", "fp32", "exp_avg", "exp_avg_sq"], at);
}

/** The code of the root-cause card that explains `comparison`. */
function cardOf(summary: RunSummary, comparison: string): string | undefined {
  return summary.findings?.find((f) => f.comparisons?.includes(comparison))?.code;
}

Deno.test({
  name: "deepspeed: CPU AutoEP, ZeRO 1/2 resume exactly and reshard within drift; ZeRO 3's bug",
  ignore,
  async fn() {
    assertVenv();
    // Plan sync by one policy, for the CI budget: autoep 2 -> 1 has one holder per region, so
    // every policy plans the same segments (the policies that differ are cpu_autoep_plans.yaml's).
    const file = join(PROJECT, "experiments/deepspeed/cpu_autoep.yaml");
    const run = await runExperiment(file, results, ["plan_sync.policies=[first_holder]"]);
    assert.equal(run.code, 1, `ZeRO 3 must FAIL the suite\n${run.stderr.slice(-3000)}`);
    for (const stage of [1, 2]) {
      const name = `deepspeed-cpu-autoep@zero_stage=${stage}`;
      const s = await latestSummary(results, name);
      if (s.verdict !== "PASS") {
        assert.fail(`ZeRO ${stage}: ${await failureContext(results, name)}`);
      }
      for (const name of ["baseline~resume-native", "baseline~resume-universal"]) {
        assert.equal(comparison(s, name).lane, "exact");
      }
      // The seed's key evidence: native and universal resumes agree bit for bit.
      assert.equal(comparison(s, "resume-native~resume-universal").compared, 50);
      const reshard = comparison(s, "baseline~resume-ep1");
      assert.equal(reshard.lane, "drift");
      assert.ok((reshard.max_abs ?? 0) > 0, "a reshard changes reduction order");
      // Digests of the logical state are equal across the autoep_size change.
      assert.deepEqual(stateCheck(s, "resume-ep1").differing, []);
      assert.equal(stateCheck(s, "resume-ep1").verdict, "PASS");
    }
    // The preset reads the split's tag folder and the converter's universal folder back
    // (checkpoint_format: deepspeed): both hold the engine's saved state, tensor by tensor, at
    // every stage; ZeRO-3 saves no module weights and no folder the accumulation position.
    for (const stage of [1, 2, 3]) {
      const s = await latestSummary(results, `deepspeed-cpu-autoep@zero_stage=${stage}`);
      const save = s.state_checks.find((c) => c.check === "save");
      assert.equal(save?.verdict, "PASS", `ZeRO ${stage}: ${save?.reason}`);
      const read = ["exp_avg", "exp_avg_sq", "optimizer_step", "param_groups", "params", "rng"];
      for (const c of read) assert.ok(save?.files_compared?.includes(c), `ZeRO ${stage}: ${c}`);
      assert.deepEqual(
        save?.files_not_checkable,
        stage === 3 ? ["engine_counters", "module_weights"] : ["engine_counters"],
      );
      const universal = s.state_checks.find((c) => c.check === "convert");
      assert.equal(universal?.verdict, "PASS", `ZeRO ${stage}: ${universal?.reason}`);
      assert.deepEqual(universal?.files_not_checkable, ["engine_counters", "module_weights"]);
    }
    // Plan sync of the same reshard by DeepSpeed's own planner, for every process: verified,
    // re-planned by the harness, and executed on the split's bytes equal to resume-ep1's state.
    for (const stage of [1, 2, 3]) {
      const s = await latestSummary(results, `deepspeed-cpu-autoep@zero_stage=${stage}`);
      assert.equal(s.plan_sync.length, 1);
      for (const plan of s.plan_sync) assertDeepSpeedPlan(plan, 2, `ZeRO ${stage}`);
    }
    // DeepSpeed 0.19.8's ZeRO-3 universal load shares one Adam step tensor across sub-groups:
    // the native resume is exact, the universal one diverges at the second resumed step.
    const z3 = await latestSummary(results, "deepspeed-cpu-autoep@zero_stage=3");
    assert.equal(z3.verdict, "FAIL");
    assert.equal(comparison(z3, "baseline~resume-native").verdict, "PASS");
    const universal = comparison(z3, "baseline~resume-universal");
    assert.equal(universal.verdict, "FAIL");
    assert.equal(universal.first_divergent_step, 52);
    assert.equal(comparison(z3, "resume-native~resume-universal").first_divergent_step, 52);
    // The same load gives every param group group 0's hyper-parameters: the expert group's name
    // becomes dense-params (docs/deepspeed.md, "Digests").
    assert.deepEqual(stateCheck(z3, "resume-universal").differing, [
      "optimizer_step",
      "param_groups",
    ]);
    assert.deepEqual(stateCheck(z3, "resume-native").differing, []);
  },
});

/** Planner fault → which check catches it (docs/plan-sync.md, "Detection"). */
const PLAN_FAULTS: Record<string, "verifier" | "execution"> = {
  "drop-segment": "verifier",
  "wrong-holder": "verifier",
  "shift-origin": "verifier",
  "swap-source-experts": "execution",
};
const FAULT_PARAMETER = "model.layers.1.mlp.experts.w2";

Deno.test({
  name: "deepspeed: each planner fault FAILs naming the parameter; the clean plans pass",
  ignore,
  async fn() {
    assertVenv();
    // ZeRO 2 of cpu_autoep.yaml in the matrix test's folder: its trainer phases are cached (a
    // planner fault reaches only the planner), so each fault re-plans and re-executes, with one
    // policy (the fault is the planner driver's, not a policy's).
    for (const [fault, caughtBy] of Object.entries(PLAN_FAULTS)) {
      const run = await runExperiment(
        join(PROJECT, "experiments/deepspeed/cpu_autoep.yaml"),
        results,
        [
          "matrix.trainer.args.zero_stage=[2]",
          "plan_sync.policies=[first_holder]",
          `trainer.args.plan_fault=${fault}`,
        ],
      );
      assert.equal(run.code, 1, `${fault}: ${run.stderr.slice(-3000)}`);
      const s = await latestSummary(results, "deepspeed-cpu-autoep@zero_stage=2");
      assert.equal(s.plan_sync.length, 1, fault);
      for (const plan of s.plan_sync) {
        assert.equal(plan.planner?.fault, fault);
        assert.equal(plan.planner?.fault_parameter, FAULT_PARAMETER);
        if (caughtBy === "verifier") {
          assert.equal(plan.verified, false, `${fault}: the verifier must reject the plan`);
          assert.match(
            plan.error ?? "",
            new RegExp(`parameters\\.${FAULT_PARAMETER.replaceAll(".", "\\.")}`),
          );
        } else {
          // The lying map is consistent with its own segments: only the bytes tell.
          assert.ok(plan.verified, `${fault}: ${plan.error}`);
          assert.equal(plan.execution?.verdict, "FAIL", fault);
          assert.ok(plan.execution!.mismatches.every((m) => m.parameter === FAULT_PARAMETER));
          assert.equal(s.findings?.[0]?.code, "cause-plan-bytes", fault);
        }
      }
      // The resumes are untouched by a planner fault.
      assert.equal(comparison(s, "baseline~resume-native").verdict, "PASS", fault);
    }
  },
});

Deno.test({
  name: "deepspeed: replica policies on two holders, autoep 1 -> 2 and world 2 -> 1, executed",
  ignore,
  async fn() {
    assertVenv();
    const file = join(PROJECT, "experiments/deepspeed/cpu_autoep_plans.yaml");
    const run = await runExperiment(file, results);
    assert.equal(run.code, 0, run.stderr.slice(-3000));
    for (const member of ["target_1", "target_2"]) {
      const s = await latestSummary(results, `deepspeed-cpu-autoep-plans@${member}`);
      assert.equal(s.plan_sync.length, 3);
      // Two source processes (replicas) feed the target processes in both members.
      for (const plan of s.plan_sync) assertDeepSpeedPlan(plan, 2, member);
      const load = (policy: string) => s.plan_sync.find((p) => p.policy === policy)!;
      // Two holders of every region: first_holder and highest_holder read different replicas.
      assert.notDeepEqual(load("first_holder").per_process, load("highest_holder").per_process);
      assert.ok(load("local_first_least_loaded").local_bytes >= load("first_holder").local_bytes);
    }
  },
});

Deno.test({
  name: "deepspeed on two Slurm nodes: the same verdict and bit-identical losses as one local node",
  ignore: ignore || SLURM_IGNORE,
  async fn() {
    assertVenv();
    assertSlurmReachable();
    // ZeRO 2 of cpu_autoep.yaml twice, without plan sync (the trainer phases are what runs on
    // several nodes): locally (2 ranks on this host; the matrix test's member, cached when that
    // test ran first), then under its own name as one
    // batch job per phase on two nodes of the namespace cluster (one torchrun per node under
    // srun, 1 rank each, c10d rendezvous and gloo over the nodes' network).
    const zero2 = (sets: string[], env: Record<string, string> = {}) =>
      runExperiment(
        join(PROJECT, "experiments/deepspeed/cpu_autoep.yaml"),
        results,
        ["matrix.trainer.args.zero_stage=[2]", "plan_sync=null", ...sets],
        env,
      );
    const local = await zero2([]);
    assert.equal(local.code, 0, local.stderr.slice(-3000));
    const slurm = await zero2(
      ["name=ds-slurm", "executor={kind: slurm, nodes: 2, poll: 1}"],
      SLURM.env,
    );
    assert.equal(slurm.code, 0, slurm.stderr.slice(-3000));
    const [a, b] = await Promise.all(
      ["deepspeed-cpu-autoep@zero_stage=2", "ds-slurm@zero_stage=2"].map((name) =>
        Deno.readTextFile(join(results, name, "latest", "losses.csv"))
      ),
    );
    assert.equal(b, a, "every phase's loss, bit for bit");
    const summary = await latestSummary(results, "ds-slurm@zero_stage=2");
    assert.ok(summary.phases.every((p) => !p.cached), "the Slurm run ran every phase itself");
    const run = join(results, "ds-slurm@zero_stage=2", "latest");
    const manifest = JSON.parse(await Deno.readTextFile(join(run, "manifest.json")));
    const clusters = manifest.clusters as Record<string, { nodes: string }>;
    for (const phase of ["baseline", "split", "resume-native", "resume-universal", "resume-ep1"]) {
      assert.match(clusters[phase].nodes, /\[\d+-\d+\]|,/, `${phase} ran on two nodes`);
      const script = await Deno.readTextFile(join(run, "phases", phase, "slurm_job.sh"));
      assert.match(script, /'--nnodes' '2' '--nproc-per-node' '1' '--rdzv-backend' 'c10d'/);
    }
  },
});

/** Fault → [first divergent step, state components that differ], from real runs (ZeRO-1). */
const FAULTS: Record<string, [number, string[]]> = {
  "no-optimizer-states": [52, [
    "exp_avg",
    "exp_avg_sq",
    "optimizer_step",
    "param_groups",
    "params",
  ]],
  "no-lr-scheduler-states": [53, ["lr_scheduler"]],
  "module-only": [52, [
    "engine_counters",
    "exp_avg",
    "exp_avg_sq",
    "lr_scheduler",
    "optimizer_step",
    "param_groups",
    "params",
  ]],
  "skip-sampler-restore": [51, ["data"]],
  "skip-rng-restore": [51, ["rng"]],
  "param-group-lost": [52, ["param_groups"]],
};

/** The tensors `expert-moment-one-param` swaps, as the state check names them. */
const SWAPPED = ["exp_avg", "exp_avg_sq"].flatMap((kind) =>
  [1, 2].map((e) => `model.layers.0.mlp.experts.w2 · expert ${e} · ${kind}`)
).sort();

Deno.test({
  name: "deepspeed: each real resume fault FAILs at its step and names its state component",
  ignore,
  async fn() {
    assertVenv();
    // 10 resumed steps instead of the file's 50 (the CI budget): every fault shows by step 53.
    // --keep-going: the crashing universal load would stop the launch of the phases after it.
    const file = join(PROJECT, "experiments/deepspeed/cpu_autoep_faults.yaml");
    const run = await runCli([
      "run",
      file,
      "--results",
      results,
      "--quiet",
      "--keep-going",
      "--set",
      TEN_RESUMED_STEPS,
    ]);
    assert.equal(run.code, 1, run.stderr.slice(-3000));
    const s = await latestSummary(results, "deepspeed-cpu-autoep-faults");
    for (const [fault, [step, components]] of Object.entries(FAULTS)) {
      const c = comparison(s, `baseline~resume-${fault}`);
      assert.equal(c.verdict, "FAIL", `${fault}: ${c.reason}`);
      assert.equal(c.first_divergent_step, step, fault);
      assert.deepEqual([...stateCheck(s, `resume-${fault}`).differing].sort(), components, fault);
    }
    assert.equal(cardOf(s, "baseline~resume-param-group-lost"), "cause-state-not-restored");
    // A universal folder loaded without checkpoint.load_universal: DeepSpeed looks for native
    // expert files and the resume crashes, which is an ERROR with its log tail, never a PASS.
    const crashed = s.phases.find((p) => p.name === "resume-no-load-universal")!;
    assert.equal(crashed.status, "failed");
    assert.equal(comparison(s, "baseline~resume-no-load-universal").verdict, "ERROR");
    const stderr = await Deno.readTextFile(
      join(results, s.experiment, "latest", "phases", crashed.name, "stderr.log"),
    );
    assert.match(stderr, /FileNotFoundError: Expert checkpoint file not found/);
  },
});

Deno.test({
  name: "deepspeed: one expert's moments swapped on a reshard: the state check names its tensors",
  ignore,
  async fn() {
    assertVenv();
    const file = join(PROJECT, "experiments/deepspeed/cpu_autoep_reshard_fault.yaml");
    const run = await runExperiment(file, results, [TEN_RESUMED_STEPS]);
    assert.equal(run.code, 1, run.stderr.slice(-3000));
    const s = await latestSummary(results, "deepspeed-cpu-autoep-reshard-fault");
    const swap = stateCheck(s, "resume-expert-moment-one-param");
    assert.equal(swap.verdict, "FAIL");
    assert.deepEqual(swap.differing, ["exp_avg", "exp_avg_sq"]);
    assert.deepEqual([...swap.differing_tensors!].sort(), SWAPPED);
    assert.equal(swap.differing_tensors_total, 4);
    // Measured: the loss stays within the reshard's drift bound (4 257 ULPs at most in steps
    // 51-60 against 16 384), so only the state check catches it.
    const reshard = comparison(s, "baseline~resume-expert-moment-one-param");
    assert.equal(reshard.lane, "drift");
    assert.equal(reshard.verdict, "PASS", reshard.reason);
    assert.equal(s.findings?.[0]?.code, "cause-state-only");
  },
});

/** Save-side fault → the component the save check names (ZeRO-1, native resume). */
const SAVE_FAULTS: Record<string, string> = {
  "cursor-saved-early": "data",
  "rng-saved-after-draw": "rng",
};

Deno.test({
  name: "deepspeed: each save-side fault FAILs at 51 and the save check blames the save",
  ignore,
  async fn() {
    assertVenv();
    const file = join(PROJECT, "experiments/deepspeed/cpu_autoep_save_faults.yaml");
    const run = await runExperiment(file, results, [TEN_RESUMED_STEPS]);
    assert.equal(run.code, 1, run.stderr.slice(-3000));
    for (const [fault, component] of Object.entries(SAVE_FAULTS)) {
      const s = await latestSummary(results, `deepspeed-cpu-autoep-save-faults@fault=${fault}`);
      const c = comparison(s, "baseline~resume-native");
      assert.equal(c.verdict, "FAIL", `${fault}: ${c.reason}`);
      assert.equal(c.first_divergent_step, 51, fault);
      // The checkpoint holds the wrong state and the resume restores it faithfully.
      const save = stateCheck(s, "split", "save");
      assert.equal(save.verdict, "FAIL", fault);
      assert.deepEqual(save.differing, [component], fault);
      assert.deepEqual(stateCheck(s, "resume-native").differing, [], fault);
      assert.equal(s.findings?.[0]?.code, "cause-save-differs", fault);
    }
  },
});

Deno.test({
  name: "deepspeed: the adapter's Python tests pass against real DeepSpeed",
  ignore,
  async fn() {
    assertVenv();
    await runPytest(
      join(VENV, "bin/python"),
      join(PROJECT, "adapters/deepspeed"),
      PROJECT,
      // The venv's own op cache (tools/setup_deepspeed.sh built the ops there).
      join(VENV, "torch_extensions"),
    );
  },
});

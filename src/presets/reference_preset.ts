/**
 * The `reference` preset: the built-in CPU MoE trainer, its universal converter and its
 * planner (`deno task trainer train|convert|plan`, docs/reference-trainer.md).
 *
 * @module
 */

import { join } from "node:path";
import { REPLICA_POLICY_NAMES } from "../affine/mod.ts";
import { plannerFlags, type PresetContext, type PresetDescriptor, presetFlags } from "./preset.ts";
import { PROJECT_DIR } from "./project_dir.ts";

/** The reference trainer's CLI module. */
export const REFERENCE_CLI: string = join(PROJECT_DIR, "reference_trainer/cli.ts");

/**
 * Faults the reference trainer injects (docs/reference-trainer.md). A test keeps this list equal
 * to the trainer's own, which the harness never imports.
 */
const REFERENCE_FAULTS = [
  "skip-rng-restore",
  "skip-scheduler-restore",
  "skip-sampler-restore",
  "reset-adam-step",
  "drop-exp-avg-sq",
  "master-from-bf16",
  "mid-accumulation-save",
  "converter-transpose",
  "replica-drift",
  "save-perturbs-rng",
  "cursor-saved-early",
  "param-group-lost",
  "carry-grads",
  "lr-scaled-on-resume",
  "weight-decay-dropped",
  "expert-moments-wrong-rank",
  "expert-moment-one-param",
] as const;

function referenceArgv(ctx: PresetContext): string[] {
  const { vars, args } = ctx;
  const deno = [Deno.execPath(), "run", "-A", "--quiet", REFERENCE_CLI];
  const fault = args.fault ? ["--fault", String(args.fault)] : [];
  if (ctx.tool === "converter") {
    return [...deno, "convert", "--input_folder", vars.native, "--output_folder", vars.universal]
      .concat(fault);
  }
  if (ctx.tool === "planner") {
    return [...deno, "plan", ...plannerFlags(ctx), ...fault];
  }
  const argv = [...deno, "train", "--steps", vars.steps, "--stop-at", vars.stop_at];
  argv.push("--seed", vars.seed, "--metrics-file", vars.metrics_file);
  if (vars.save_at) argv.push("--save-at", vars.save_at, "--checkpoint-dir", vars.checkpoint_dir);
  if (vars.digest_at) argv.push("--digest-at", vars.digest_at);
  if (vars.lr_scale) argv.push("--lr-scale-on-resume", vars.lr_scale);
  if (vars.resume_from) {
    argv.push("--resume-from", vars.resume_from, "--resume-kind", vars.resume_kind);
  }
  if (vars.plan) argv.push("--plan", vars.plan);
  return argv.concat(presetFlags(REFERENCE_PRESET, args));
}

/** The reference preset. */
export const REFERENCE_PRESET: PresetDescriptor = {
  name: "reference",
  description: "built-in CPU mixture-of-experts trainer, converter and planner",
  args: {
    world_size: { flag: "--world-size", topology: true, description: "data-parallel ranks" },
    ep_size: { flag: "--ep-size", topology: true, description: "expert-parallel ranks" },
    placement: {
      flag: "--placement",
      topology: true,
      description: "AutoEP placement descriptor, or a path to one",
    },
    zero_stage: {
      flag: "--zero-stage",
      topology: true,
      values: [1, 2, 3],
      description: "ZeRO stage",
    },
    precision: { flag: "--precision", values: ["fp32", "bf16"], description: "module precision" },
    grad_accum: { flag: "--grad-accum", description: "micro-batches per optimizer step" },
    fault: { flag: "--fault", description: "inject one named resume bug" },
  },
  faults: REFERENCE_FAULTS,
  policies: REPLICA_POLICY_NAMES,
  tools: ["trainer", "converter", "planner"],
  executesPlans: true,
  checkpointMarker: "checkpoint_complete.json",
  gradAccumArg: "grad_accum",
  metricsFormat: "jsonl",
  codeInputs: [join(PROJECT_DIR, "reference_trainer"), join(PROJECT_DIR, "src/affine")],
  argv: referenceArgv,
};

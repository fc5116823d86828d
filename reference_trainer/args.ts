/**
 * Command-line parsing for `train`, `convert` and `plan`: one flag table per command (the trainer
 * contract's spelling), parsed by commander — `--flag value` or `--flag=value`, unknown flags
 * rejected — with `PARITY_*` environment variables as defaults (flags win; an empty variable
 * counts as unset), and every `train` value validated into a {@link TrainOptions}.
 *
 * @module
 */

import { Command, CommanderError, Option } from "commander";
import {
  makePlacement,
  type PlacementDescriptor,
  uniformPlacement,
  validatePlacement,
} from "../src/affine/mod.ts";
import {
  MODEL,
  TRAINER_EXIT_CODES,
  TrainerExitError,
  type TrainOptions,
  UsageError,
} from "./model/mod.ts";
import { FAULT_NAMES, isFault } from "./faults.ts";

/** One accepted flag. */
export interface FlagSpec {
  /** Flag name without dashes. */
  name: string;
  /** `PARITY_*` variable used when the flag is absent. */
  env?: string;
  /** True for a switch that takes no value. */
  bool?: boolean;
  /** One-line help. */
  help: string;
}

/** Flags of `train`. */
export const TRAIN_FLAGS: readonly FlagSpec[] = [
  {
    name: "steps",
    env: "PARITY_STEPS",
    help: "schedule length (last step of the full run), default 40",
  },
  { name: "stop-at", env: "PARITY_STOP_AT", help: "last step this process runs, default --steps" },
  {
    name: "seed",
    env: "PARITY_SEED",
    help: "seed of data, init, dropout and shuffles, default 1234",
  },
  {
    name: "save-at",
    env: "PARITY_SAVE_AT",
    help: "save a native checkpoint after this step, or after each of a comma list (3,6)",
  },
  { name: "checkpoint-dir", env: "PARITY_CHECKPOINT_DIR", help: "root of native checkpoints" },
  {
    name: "digest-at",
    env: "PARITY_DIGEST_AT",
    help: "report the state's digests after this step (or each of a comma list), without " +
      "saving (the save check)",
  },
  {
    name: "lr-scale-on-resume",
    env: "PARITY_LR_SCALE",
    help: "a resumed process scales its LR by this (a calibration resume), default 1",
  },
  {
    name: "resume-from",
    env: "PARITY_RESUME_FROM",
    help: "tag folder, universal folder or checkpoint root",
  },
  {
    name: "resume-kind",
    env: "PARITY_RESUME_KIND",
    help: "native | universal | plan (default: detected; plan needs --plan)",
  },
  { name: "plan", env: "PARITY_PLAN", help: "plan file for --resume-kind plan" },
  {
    name: "metrics-file",
    env: "PARITY_METRICS_FILE",
    help: "JSONL file to append to (default stdout)",
  },
  { name: "world-size", help: "data-parallel ranks W, default 1" },
  { name: "ep-size", help: "expert-parallel ranks P (divides W), default 1 or the placement's" },
  {
    name: "placement",
    help: "AutoEP placement: JSON descriptor, [[experts of EP rank 0], ...] or a file",
  },
  { name: "zero-stage", help: "1 | 2 | 3, default 2" },
  { name: "precision", help: "fp32 | bf16, default fp32" },
  { name: "grad-accum", help: "micro-batches per optimizer step (divides 16), default 1" },
  { name: "fault", help: `inject a resume bug: ${FAULT_NAMES.join(", ")}` },
  { name: "quiet", bool: true, help: "no progress lines on stderr" },
];

/** Flags of `convert` (DeepSpeed's spelling). */
export const CONVERT_FLAGS: readonly FlagSpec[] = [
  { name: "input_folder", help: "native tag folder (<dir>/global_step<N>)" },
  { name: "output_folder", help: "universal output folder" },
  { name: "fault", help: "converter-side faults act here; other names are accepted and ignored" },
];

/** Thrown by {@link parseFlags} for `--help`: the CLI prints the command's help and exits 0. */
export class HelpRequested extends TrainerExitError {
  /** Creates the marker error. */
  constructor() {
    super("help", TRAINER_EXIT_CODES.OK);
  }
}

/**
 * Parses flags against specs with commander, merging `PARITY_*` defaults; returns raw string
 * values. A flag may come as `--flag value` or `--flag=value`; the last occurrence wins. Every
 * problem is a {@link UsageError} naming the flag or argument.
 */
export function parseFlags(
  argv: readonly string[],
  specs: readonly FlagSpec[],
  env: Record<string, string | undefined>,
): Map<string, string> {
  const command = new Command("trainer")
    .exitOverride()
    .configureOutput({ writeOut: () => {}, writeErr: () => {}, outputError: () => {} })
    .allowUnknownOption()
    .argument("[leftover...]");
  const options = specs.map((spec) => {
    const option = new Option(spec.bool ? `--${spec.name}` : `--${spec.name} <value>`, spec.help);
    command.addOption(option);
    return { spec, option };
  });
  try {
    command.parse([...argv], { from: "user" });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    if (error.code === "commander.helpDisplayed") throw new HelpRequested();
    // Commander reports a missing value only for the last word (any word after a flag is its
    // value), so that word names the flag; its message is not parsed.
    const last = argv.at(-1);
    if (error.code === "commander.optionMissingArgument" && last?.startsWith("--")) {
      throw new UsageError(`${last} needs a value`);
    }
    throw new UsageError(error.message.replace(/^error: /, ""));
  }
  const leftover = command.args[0];
  if (leftover !== undefined) throw _leftoverError(leftover, specs);
  const values = new Map<string, string>();
  for (const { spec, option } of options) {
    const given: unknown = command.getOptionValue(option.attributeName());
    if (given !== undefined) values.set(spec.name, String(given));
    else if (spec.env) {
      const fallback = env[spec.env];
      if (fallback !== undefined && fallback !== "") values.set(spec.name, fallback);
    }
  }
  return values;
}

/** Why a word commander could not place is wrong: an unknown flag, a value on a switch, a stray. */
function _leftoverError(word: string, specs: readonly FlagSpec[]): UsageError {
  if (!word.startsWith("--")) return new UsageError(`unexpected argument ${JSON.stringify(word)}`);
  const eq = word.indexOf("=");
  const name = word.slice(2, eq < 0 ? undefined : eq);
  const spec = specs.find((s) => s.name === name);
  if (spec?.bool && eq >= 0) return new UsageError(`--${name} takes no value`);
  return new UsageError(`unknown flag --${name} (see --help)`);
}

/** Help text of a command. */
export function helpText(command: string, specs: readonly FlagSpec[]): string {
  const lines = [`usage: deno task trainer ${command} [flags]`, ""];
  for (const s of specs) {
    const env = s.env ? ` (env ${s.env})` : "";
    lines.push(`  --${s.name.padEnd(16)} ${s.help}${env}`);
  }
  return lines.join("\n");
}

function int(
  values: Map<string, string>,
  name: string,
  fallback: number | null,
  min: number,
  max: number,
) {
  const raw = values.get(name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw.trim())) {
    throw new UsageError(`--${name} must be an integer, got ${JSON.stringify(raw)}`);
  }
  const n = Number(raw.trim());
  if (n < min || n > max) throw new UsageError(`--${name} must be in [${min}, ${max}], got ${n}`);
  return n;
}

/**
 * A step or an ascending comma list of steps (`3,6`: the contract's several saves), each in
 * [min, max]; empty when the flag is absent or empty.
 */
function intList(values: Map<string, string>, name: string, min: number, max: number): number[] {
  const raw = values.get(name);
  if (raw === undefined || raw.trim() === "") return [];
  const steps = raw.split(",").map((part) => int(new Map([[name, part]]), name, null, min, max)!);
  steps.forEach((step, i) => {
    if (i > 0 && step <= steps[i - 1]) {
      throw new UsageError(`--${name} must list ascending distinct steps, got ${raw}`);
    }
  });
  return steps;
}

/** A factor in (0, 2], 1 when the flag is absent. */
function scale(values: Map<string, string>, name: string): number {
  const raw = values.get(name);
  if (raw === undefined) return 1;
  const n = Number(raw.trim());
  if (raw.trim() === "" || !(n > 0 && n <= 2)) {
    throw new UsageError(`--${name} must be a number in (0, 2], got ${JSON.stringify(raw)}`);
  }
  return n;
}

/** Parses `--placement`: a descriptor object, a list of per-EP-rank expert lists, or a file. */
export function parsePlacement(raw: string): PlacementDescriptor {
  let text = raw.trim();
  if (!text.startsWith("{") && !text.startsWith("[")) {
    try {
      text = Deno.readTextFileSync(raw);
    } catch {
      throw new UsageError(`--placement: cannot read file ${raw}`);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`--placement: not valid JSON`);
  }
  try {
    if (Array.isArray(value)) {
      if (!value.every((r) => Array.isArray(r))) {
        throw new UsageError(`--placement: a list must hold one expert list per EP rank`);
      }
      return makePlacement(MODEL.numExperts, value as number[][]);
    }
    return validatePlacement(value, "--placement");
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`--placement: ${(e as Error).message}`);
  }
}

/** Validates `train` flags into options (usage errors for every bad value). */
export function trainOptions(values: Map<string, string>): TrainOptions {
  const steps = int(values, "steps", 40, 1, 1_000_000)!;
  const stopAt = int(values, "stop-at", steps, 1, steps)!;
  const seed = int(values, "seed", 1234, 0, 0xffffffff)!;
  const saveAt = intList(values, "save-at", 1, stopAt);
  const digestAt = intList(values, "digest-at", 1, stopAt);
  const checkpointDir = values.get("checkpoint-dir") ?? null;
  if (saveAt.length > 0 && checkpointDir === null) {
    throw new UsageError(`--save-at needs --checkpoint-dir (or PARITY_CHECKPOINT_DIR)`);
  }
  const resumeFrom = values.get("resume-from") ?? null;
  // A kind without a path is ignored: harnesses may export PARITY_RESUME_KIND to every phase.
  const resumeKind = resumeFrom === null ? null : values.get("resume-kind") ?? null;
  const plan = values.get("plan") ?? null;
  if (resumeKind === "plan" && plan === null) {
    throw new UsageError(`--resume-kind plan needs --plan`);
  }
  const worldSize = int(values, "world-size", 1, 1, 256)!;
  const placementRaw = values.get("placement");
  const placement = placementRaw === undefined ? null : parsePlacement(placementRaw);
  const epSize = int(values, "ep-size", placement?.ep_size ?? 1, 1, 256)!;
  if (worldSize % epSize !== 0) {
    throw new UsageError(`--ep-size ${epSize} does not divide --world-size ${worldSize}`);
  }
  if (placement && placement.ep_size !== epSize) {
    throw new UsageError(
      `--placement has ep_size ${placement.ep_size}, but --ep-size is ${epSize}`,
    );
  }
  if (placement && placement.num_experts !== MODEL.numExperts) {
    throw new UsageError(
      `--placement has ${placement.num_experts} experts, the model has ${MODEL.numExperts}`,
    );
  }
  let resolvedPlacement: PlacementDescriptor;
  if (placement) resolvedPlacement = placement;
  else {
    if (MODEL.numExperts % epSize !== 0) {
      throw new UsageError(
        `--ep-size ${epSize} does not divide ${MODEL.numExperts} experts; give --placement`,
      );
    }
    resolvedPlacement = uniformPlacement(MODEL.numExperts, epSize);
  }
  const zero = values.get("zero-stage") ?? "2";
  if (!["1", "2", "3"].includes(zero)) {
    throw new UsageError(`--zero-stage must be 1, 2 or 3, got ${zero}`);
  }
  const precision = values.get("precision") ?? "fp32";
  if (precision !== "fp32" && precision !== "bf16") {
    throw new UsageError(`--precision must be fp32 or bf16, got ${precision}`);
  }
  const gradAccum = int(values, "grad-accum", 1, 1, MODEL.globalBatch)!;
  if (MODEL.globalBatch % gradAccum !== 0) {
    throw new UsageError(
      `--grad-accum ${gradAccum} does not divide the global batch of ${MODEL.globalBatch}`,
    );
  }
  const fault = values.get("fault") ?? null;
  if (fault !== null && !isFault(fault)) {
    throw new UsageError(`--fault ${fault} is unknown (known: ${FAULT_NAMES.join(", ")})`);
  }
  const lrScaleOnResume = scale(values, "lr-scale-on-resume");
  return {
    steps,
    stopAt,
    seed,
    saveAt,
    digestAt,
    lrScaleOnResume,
    checkpointDir,
    resumeFrom,
    resumeKind,
    plan,
    metricsFile: values.get("metrics-file") ?? null,
    topology: {
      worldSize,
      epSize,
      placement: resolvedPlacement,
      zeroStage: Number(zero) as 1 | 2 | 3,
      precision,
    },
    gradAccum,
    fault,
    progress: values.get("quiet") !== "true",
  };
}

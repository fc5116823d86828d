/**
 * What a trainer family's preset is: data that the schema, the validation rules and the command
 * expansion all read, so nothing else in the harness branches on a preset's name. A preset
 * only expands into argv and environment; the program it names is launched like any other,
 * on the far side of the trainer contract (README, "The trainer contract").
 *
 * @module
 */

import type { CheckpointFormat } from "./checkpoint_readers.ts";
import type { MetricsFormat, PhaseTool } from "../types/mod.ts";

/** One argument a preset understands (`trainer.args.<key>`). */
export interface PresetArg {
  /** Command-line flag the value is passed as (`--world-size`). */
  flag: string;
  /** Whether the argument is part of the topology (a change makes a reshard). */
  topology?: boolean;
  /** Allowed values, when the set is closed. */
  values?: readonly (string | number | boolean)[];
  /** One line for `parity plan`, errors and docs. */
  description: string;
}

/** What a preset's argv builder sees for one phase. */
export interface PresetContext {
  /** The program of the phase. */
  tool: PhaseTool;
  /** The trainer-contract placeholder values of the phase (`steps`, `save_at`, `native`...). */
  vars: Readonly<Record<string, string>>;
  /** Arguments in force for the phase (keys of {@link PresetDescriptor.args}). */
  args: Readonly<Record<string, unknown>>;
  /** Bytes per element for plan statistics (planner phases). */
  elementSize: number;
  /**
   * The experiment file's folder: relative paths in arguments (a script) resolve against it
   * (absent: the current folder).
   */
  baseDir?: string;
  /**
   * Nodes a launcher preset's phase spans (`executor.nodes` of a Slurm phase run under `srun`;
   * absent: 1). Its argv then starts one launcher per node for that node's share of the ranks.
   */
  nodes?: number;
}

/** A trainer family: its flags, faults, policies, marker, topology, code and argv template. */
export interface PresetDescriptor {
  /** `preset:` value in experiment files. */
  name: string;
  /** One line: what the preset runs. */
  description: string;
  /** The arguments it accepts; any other key is a validation error. */
  args: Readonly<Record<string, PresetArg>>;
  /** Fault names its `fault` argument accepts (empty: none). */
  faults: readonly string[];
  /** Replica policies its planner knows (empty: it has no planner). */
  policies: readonly string[];
  /** Programs it provides: the trainer always, the converter and planner when it has them. */
  tools: readonly PhaseTool[];
  /** Whether its trainer can resume by executing a plan (`plan_sync.resume`). */
  executesPlans: boolean;
  /** File inside a saved tag folder that proves the save completed. */
  checkpointMarker?: string;
  /**
   * The layout its checkpoints are written in, read back after the split and the converter
   * (`trainer.checkpoint_format` of a command trainer says the same).
   */
  checkpointFormat?: CheckpointFormat;
  /** The Python that runs the checkpoint reader for a phase with these arguments (its venv's). */
  readerPython?: (args: Readonly<Record<string, unknown>>) => string;
  /**
   * Template of the tag folder its split saves under `${checkpoint_dir}` (placeholders `save_at`,
   * `steps`, `seed`, `experiment`); default `global_step${save_at}`. `trainer.checkpoint_tag`
   * overrides it.
   */
  checkpointTag?: string;
  /**
   * Its phases run in the experiment file's folder, as a `command:` trainer's do, so relative
   * paths among its arguments (a script's `--train_file data.txt`) mean what they say there;
   * default false: the phase folder.
   */
  runsInExperimentDir?: boolean;
  /** Arguments `trainer.args` must set. */
  requiredArgs?: readonly string[];
  /** The argument that holds gradient accumulation (micro-batches per optimizer step). */
  gradAccumArg?: string;
  /** Format of the metrics it writes to `${metrics_file}`. */
  metricsFormat: MetricsFormat;
  /**
   * Other sources `trainer.metrics` may name instead (the program also writes them, e.g. the
   * TensorBoard events of a Hugging Face script); default none.
   */
  otherMetricsFormats?: readonly MetricsFormat[];
  /** Files, folders or `!commands` whose content joins every phase's cache key. */
  codeInputs: readonly string[];
  /** Code inputs that depend on the phase's arguments (added to {@link codeInputs}). */
  phaseCodeInputs?(ctx: PresetContext): string[];
  /** The argv of one phase. */
  argv(ctx: PresetContext): string[];
  /**
   * Its argv starts a launcher (torchrun, deepspeed) that spawns the ranks of one node: on Slurm
   * it runs under `srun`, once per node, unless `executor.srun` says otherwise.
   */
  launcher?: boolean;
  /** Extra environment of one phase. */
  env?(ctx: PresetContext): Record<string, string>;
  /**
   * Why the machine cannot run the preset (a missing environment), or undefined; `argSets` are
   * the argument sets the experiments give its programs (trainer, converter, resumes).
   */
  environmentProblem?(argSets?: readonly Readonly<Record<string, unknown>>[]): string | undefined;
  /** How to run the preset under published releases of its framework (`parity bisect --package`). */
  releases?: PresetReleases;
}

/** A preset's framework releases: one cached environment per release, chosen by an argument. */
export interface PresetReleases {
  /** The package on its registry (`deepspeed`). */
  package: string;
  /** The oldest release the preset's trainer can run at all (older ones are not tried). */
  oldest: string;
  /** The argument whose value, a release, picks a phase's environment (`deepspeed`). */
  releaseArg: string;
  /** The argv that builds (or verifies, when cached) the environment of `version`. */
  setupArgv(version: string): string[];
  /** The argv that prints the registry's releases (`pip index versions <package>`). */
  listArgv(): string[];
}

/** Text of an argument value on a command line: strings as they are, anything else as JSON. */
export function argText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** `[flag, value]` pairs of the preset's arguments that are set, in sorted key order. */
export function presetFlags(
  preset: PresetDescriptor,
  args: Readonly<Record<string, unknown>>,
  skip: readonly string[] = [],
): string[] {
  const out: string[] = [];
  for (const key of Object.keys(args).sort()) {
    const value = args[key];
    const spec = preset.args[key];
    if (!spec || skip.includes(key) || value === undefined || value === null || value === "") {
      continue;
    }
    out.push(spec.flag, argText(value));
  }
  return out;
}

/** The planner flags of the contract (README, "Plan sync"), as both presets' planners take them. */
export function plannerFlags(ctx: PresetContext): string[] {
  const { vars } = ctx;
  return [
    "--source-checkpoint",
    vars.source_checkpoint,
    "--target",
    vars.target,
    "--policy",
    vars.policy,
    "--out",
    vars.plan_out,
    "--element-size",
    String(ctx.elementSize),
  ];
}

/** Keys of the preset's topology arguments. */
export function topologyArgs(preset: PresetDescriptor): string[] {
  return Object.entries(preset.args).filter(([, a]) => a.topology).map(([key]) => key);
}

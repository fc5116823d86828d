/**
 * The offline bundle (`parity plan <file> --bundle DIR`): an experiment's resolved phases written
 * for `tools/offline_phases.py`, which runs them on a machine without Deno or network (a lent GPU
 * box), and read back by `parity run <file> --import DIR` (offline_import.ts), which judges them.
 * The plan, the phase order and the cache keys are the runner's own (resolvePlan, computeKeys);
 * only their paths are written portably, as tokens the target expands:
 *
 * - `<run>`: the bundle folder, which is the run folder the phases write (`phases/<name>/`);
 * - `<project>`: the checkout the script runs from;
 * - `<python>`: the preset venv's interpreter (default `<project>/.venv-deepspeed/bin/python`,
 *   `--python` on the target), `torchrun` written as `<python> -m torch.distributed.run`;
 * - `<deno>`: the Deno binary (`--deno`), for the reference trainer.
 *
 * Secret-named variables are never written: the bundle names them (`env_from_target`) and the
 * target's own environment supplies them; a phase whose argv holds a secret is refused.
 *
 * @module
 */

import { basename, join, resolve } from "node:path";
import type { Experiment } from "../../experiment/mod.ts";
import { HARNESS_REDACTION, isSecretName } from "../../process/mod.ts";
import { DEEPSPEED_VENV, PROJECT_DIR } from "../../presets/mod.ts";
import { type PhaseSpec, placePlan, type ResolvedPlan, UsageError } from "../../types/mod.ts";
import {
  computeKeys,
  experimentFolderName,
  HARNESS_VERSION,
  learnRunSecrets,
  phaseOutputs,
  requiredArtifacts,
  writeJsonAtomic,
} from "../store/mod.ts";

/** Version of `bundle.json`; tools/offline_phases.py refuses any other. */
export const BUNDLE_FORMAT = 1;

/** The bundle's description, at its root. */
export const BUNDLE_FILE = "bundle.json";

/** What offline_phases.py writes in each phase folder it ran (or skipped). */
export const OFFLINE_RESULT_FILE = "offline_result.json";

/** What offline_phases.py writes at the bundle's root: the host, Python, torch, CUDA, GPUs. */
export const OFFLINE_ENVIRONMENT_FILE = "offline_environment.json";

/** One phase as the target runs it; every path written with the tokens of this module. */
export interface BundlePhase {
  /** Phase name. */
  name: string;
  /** What it does. */
  role: PhaseSpec["role"];
  /** Phases that must end ok first. */
  consumes: string[];
  /** Program and arguments (a list: never a shell). */
  argv: string[];
  /** Variables set over the target's environment (PARITY_* and the phase's own), no secret. */
  env: Record<string, string>;
  /** Secret-named variables the phase is given by the target's environment, never written. */
  env_from_target: string[];
  /** Working folder. */
  cwd: string;
  /** Seconds before its process group is stopped. */
  timeout_s: number;
  /** Its phase folder (`<run>/phases/<name>`). */
  dir: string;
  /** Where its artifacts are (phase.json's `outputs`). */
  outputs: Record<string, string>;
  /** Artifacts it must leave (the runner's missing-artifact check), by name. */
  must_leave: Record<string, string>;
  /** Files written before it starts (a planner's target topology). */
  write_files: Record<string, string>;
  /** Its cache key, as the runner computes it. */
  cache_key: string;
}

/** `bundle.json`. */
export interface Bundle {
  /** {@linkcode BUNDLE_FORMAT}. */
  format: number;
  /** Experiment name. */
  experiment: string;
  /** Its folder under the results root. */
  experiment_folder: string;
  /** Harness that wrote it. */
  harness_version: string;
  /** When. */
  created_at: string;
  /** The experiment file, relative to the project. */
  experiment_file: string | null;
  /** The `--set` overrides it was resolved with (`parity run --import` needs the same). */
  sets: string[];
  /** Default of `<python>`. */
  python: string;
  /** Wheels (bundle-relative) the target installs before the Python phases. */
  wheels: string[];
  /** Phases in dependency order. */
  phases: BundlePhase[];
  /** What a person should know: paths left absolute, venvs `--python` does not override. */
  notes: string[];
}

/** Options of {@linkcode writeBundle}. */
export interface BundleOptions {
  /** Folder to write (created; must be empty or absent). */
  bundleDir: string;
  /** Folder the plan's relative code inputs resolve against (the experiment file's). */
  baseDir: string;
  /**
   * The harness's environment: the secrets the experiment names are learnt from it, code inputs'
   * `!commands` run in it.
   */
  harnessEnv: Record<string, string>;
  /** The experiment file, for the record. */
  experimentFile: string | null;
  /** The `--set` overrides, for the record. */
  sets?: string[];
  /** Wheels to copy into `wheels/` (a DeepSpeed wheel for the target). */
  wheels?: string[];
}

/**
 * Places a resolved plan (not yet placed) in the bundle folder and writes `bundle.json` (and its
 * wheels); returns it. `run.experiment` is the plan's source, scanned for the secrets it names.
 */
export async function writeBundle(
  run: { plan: ResolvedPlan; experiment: Experiment },
  options: BundleOptions,
): Promise<Bundle> {
  const runDir = resolve(options.bundleDir);
  await assertEmptyFolder(runDir);
  const plan = placePlan(run.plan, runDir);
  learnRunSecrets(run.experiment, plan.phases, options.harnessEnv);
  const keys = await computeKeys(plan.phases, options.baseDir, options.harnessEnv);
  const notes: string[] = [];
  const portable = portablePaths(runDir, notes);
  const phases = plan.phases.map((spec) => bundlePhase(spec, keys.get(spec.name)!, portable));
  await Deno.mkdir(join(runDir, "wheels"), { recursive: true });
  const wheels: string[] = [];
  for (const wheel of options.wheels ?? []) {
    const target = join("wheels", basename(wheel));
    await Deno.copyFile(wheel, join(runDir, target));
    wheels.push(target);
  }
  const bundle: Bundle = {
    format: BUNDLE_FORMAT,
    experiment: plan.experiment,
    experiment_folder: experimentFolderName(plan.experiment),
    harness_version: HARNESS_VERSION,
    created_at: new Date().toISOString(),
    experiment_file: options.experimentFile ? portable.text(resolve(options.experimentFile)) : null,
    sets: options.sets ?? [],
    python: portable.text(join(DEEPSPEED_VENV, "bin/python")),
    wheels,
    phases,
    notes: [...new Set(notes)],
  };
  await writeJsonAtomic(join(runDir, BUNDLE_FILE), bundle);
  return bundle;
}

/** The runner's phase spec as the target runs it. */
function bundlePhase(spec: PhaseSpec, key: string, portable: PortablePaths): BundlePhase {
  if (spec.executor.kind !== "local") {
    throw new UsageError(
      `phase ${spec.name} runs under executor ${spec.executor.kind}: a bundle runs local phases only`,
    );
  }
  if (JSON.stringify(HARNESS_REDACTION.redactValue(spec.argv)) !== JSON.stringify(spec.argv)) {
    throw new UsageError(
      `phase ${spec.name}: its argv holds a secret, which a bundle never writes; pass it in a ` +
        "secret-named environment variable instead",
    );
  }
  const env: Record<string, string> = {};
  const fromTarget: string[] = [];
  for (const [name, value] of Object.entries(spec.env)) {
    if (isSecretName(name)) fromTarget.push(name);
    else env[name] = portable.text(value);
  }
  const { paths } = spec;
  const writeFiles: Record<string, string> = {};
  if (spec.target && paths.target) {
    writeFiles[portable.text(paths.target)] = JSON.stringify(spec.target, null, 2) + "\n";
  }
  const outputs: Record<string, string> = {};
  for (const [name, value] of Object.entries(phaseOutputs(spec))) {
    if (value !== undefined) {
      outputs[name] = name === "checkpoint_marker" ? value : portable.text(value);
    }
  }
  return {
    name: spec.name,
    role: spec.role,
    consumes: spec.consumes,
    argv: portable.argv(spec.argv, spec.name),
    env,
    env_from_target: fromTarget.sort(),
    cwd: portable.text(spec.cwd),
    timeout_s: spec.timeoutS,
    dir: portable.text(paths.dir),
    outputs,
    must_leave: Object.fromEntries(
      Object.entries(requiredArtifacts(spec)).map(([name, path]) => [name, portable.text(path)]),
    ),
    write_files: writeFiles,
    cache_key: key,
  };
}

/** Rewrites this machine's paths as the bundle's tokens. */
interface PortablePaths {
  /** A string with the run and project folders as `<run>` and `<project>`. */
  text(value: string): string;
  /** An argv with its interpreter as `<python>` or `<deno>` too. */
  argv(argv: readonly string[], phase: string): string[];
}

function portablePaths(runDir: string, notes: string[]): PortablePaths {
  const text = (value: string): string => {
    // The bundle may lie inside the project: its own folder is replaced first.
    const out = value.replaceAll(runDir, "<run>").replaceAll(PROJECT_DIR, "<project>");
    if (out.startsWith("/") && !out.startsWith("/dev/")) {
      notes.push(`left absolute (outside the project and the bundle): ${out}`);
    }
    return out;
  };
  const venvBin = join(DEEPSPEED_VENV, "bin");
  const argv = (argv: readonly string[], phase: string): string[] => {
    const [program, ...rest] = argv;
    const tail = rest.map(text);
    if (program === Deno.execPath()) return ["<deno>", ...tail];
    if (program === join(venvBin, "python")) return ["<python>", ...tail];
    // torchrun's console script is `python -m torch.distributed.run`: --python chooses both.
    if (program === join(venvBin, "torchrun")) {
      return ["<python>", "-m", "torch.distributed.run", ...tail];
    }
    if (/\/bin\/(python3?|torchrun)$/.test(program)) {
      notes.push(
        `phase ${phase} runs ${text(program)}, another venv: --python does not replace it`,
      );
    }
    return [text(program), ...tail];
  };
  return { text, argv };
}

async function assertEmptyFolder(dir: string): Promise<void> {
  try {
    for await (const _ of Deno.readDir(dir)) {
      throw new UsageError(`--bundle ${dir}: the folder is not empty (give a new one)`);
    }
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    if (e instanceof Deno.errors.NotADirectory) {
      throw new UsageError(`--bundle ${dir}: not a folder`);
    }
    throw e;
  }
}

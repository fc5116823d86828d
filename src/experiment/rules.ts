/**
 * Cross-field rules that a schema cannot express: save_at < steps, preset xor command,
 * reference-trainer arguments and faults, EP/world-size divisibility, converters and planners,
 * metrics patterns, comparisons naming real phases, retry regexes and `${placeholders}`. All
 * problems are returned together.
 *
 * @module
 */

import { didYouMean } from "./_did_you_mean.ts";
import { describeValue, isRecord } from "./_path.ts";
import type { ValidationError } from "./validation_errors.ts";
import { checkTemplate, PLACEHOLDERS, type ProgramKind } from "./placeholders.ts";
import {
  type Experiment,
  type ProcessEntry,
  REFERENCE_FAULTS,
  type TrainerArgs,
} from "./schema.ts";

/** Reference-trainer argument → command-line flag (`world_size` → `--world-size`). */
export const REFERENCE_ARG_FLAGS: Readonly<Record<string, string>> = {
  world_size: "--world-size",
  ep_size: "--ep-size",
  placement: "--placement",
  zero_stage: "--zero-stage",
  precision: "--precision",
  grad_accum: "--grad-accum",
  fault: "--fault",
};

/** Replica policies the reference planner knows. */
export const REFERENCE_POLICIES = [
  "first_holder",
  "local_first_least_loaded",
  "balanced",
  "highest_holder",
] as const;

/** The reference preset, as used when a converter or planner is implied. */
const REFERENCE_PROCESS: ProcessEntry = { preset: "reference", timeout: 3600 };

/**
 * The converter the run uses: the experiment's own, else the reference preset when the trainer
 * is the reference preset, else undefined.
 */
export function effectiveConverter(exp: Experiment): ProcessEntry | undefined {
  return exp.converter ?? (exp.trainer.preset === "reference" ? REFERENCE_PROCESS : undefined);
}

/** The planner the run uses (same defaulting as {@link effectiveConverter}). */
export function effectivePlanner(exp: Experiment): ProcessEntry | undefined {
  return exp.planner ?? (exp.trainer.preset === "reference" ? REFERENCE_PROCESS : undefined);
}

/** `override` over `base` (shallow: a key in `override` replaces the same key of `base`). */
export function mergeArgs(
  base: TrainerArgs | undefined,
  override: TrainerArgs | undefined,
): TrainerArgs {
  return { ...(base ?? {}), ...(override ?? {}) };
}

/**
 * The arguments every phase of a program sees, so `${args.<key>}` is known in all of them: the
 * trainer's own `args` (resume phases only add to them); for the converter `trainer.args` merged
 * with `converter.args`; for the planner `trainer.args`, then `plan_sync.target`, then
 * `planner.args`.
 */
export function programArgs(exp: Experiment, kind: ProgramKind): TrainerArgs {
  const trainer = exp.trainer.args ?? {};
  if (kind === "trainer") return { ...trainer };
  if (kind === "converter") return mergeArgs(trainer, exp.converter?.args);
  return mergeArgs(mergeArgs(trainer, exp.plan_sync?.target), exp.planner?.args);
}

/** Whether any resume starts from a universal checkpoint (so a convert phase runs). */
export function needsConvert(exp: Experiment): boolean {
  return Object.values(exp.resume).some((entry) => entry.from === "universal");
}

/**
 * Names of the phases an experiment produces, in the pipeline's order: `baseline`, `split`,
 * `resume-<name>` of native resumes, `convert` (when a resume is universal), `resume-<name>` of
 * universal resumes, `plan-<policy>`, `resume-plan-<policy>` (when `plan_sync.resume`),
 * `baseline-repeat-<k>` for k in 1..noise_floor.repeats.
 */
export function phaseNames(exp: Experiment): string[] {
  const names = ["baseline", "split"];
  const resumes = Object.entries(exp.resume);
  for (const [name, entry] of resumes) if (entry.from === "native") names.push(`resume-${name}`);
  if (needsConvert(exp)) names.push("convert");
  for (const [name, entry] of resumes) {
    if (entry.from === "universal") names.push(`resume-${name}`);
  }
  if (exp.plan_sync) {
    for (const policy of exp.plan_sync.policies) names.push(`plan-${policy}`);
    if (exp.plan_sync.resume) {
      for (const policy of exp.plan_sync.policies) names.push(`resume-plan-${policy}`);
    }
  }
  for (let k = 1; k <= exp.noise_floor.repeats; k++) names.push(`baseline-repeat-${k}`);
  return names;
}

/** Runs every cross-field rule; an empty list means the experiment is consistent. */
export function checkExperimentRules(exp: Experiment): ValidationError[] {
  const errors: ValidationError[] = [];
  const add = (path: string, message: string) => errors.push({ path, message });

  if (exp.schedule.save_at >= exp.schedule.steps) {
    add(
      "schedule.save_at",
      `expected less than schedule.steps (${exp.schedule.steps}), got ${exp.schedule.save_at}`,
    );
  }

  checkProgramShape("trainer", exp.trainer, add);
  if (exp.converter) checkProgramShape("converter", exp.converter, add);
  if (exp.planner) checkProgramShape("planner", exp.planner, add);

  const converter = effectiveConverter(exp);
  const planner = effectivePlanner(exp);
  const trainerIsReference = exp.trainer.preset === "reference";

  // Reference-trainer arguments wherever they reach a reference-preset process.
  if (trainerIsReference) {
    checkReferenceArgs("trainer.args", exp.trainer.args, add);
    for (const [name, entry] of Object.entries(exp.resume)) {
      checkReferenceArgs(`resume.${name}.args`, entry.args, add);
    }
  }
  if (exp.converter?.preset === "reference") {
    checkReferenceArgs("converter.args", exp.converter.args, add);
  }
  if (exp.planner?.preset === "reference") {
    checkReferenceArgs("planner.args", exp.planner.args, add);
  }
  if (exp.plan_sync && (trainerIsReference || planner?.preset === "reference")) {
    checkReferenceArgs("plan_sync.target", exp.plan_sync.target, add);
  }

  // Topology consistency: each context as the process will see it.
  checkTopology("trainer.args", {}, exp.trainer.args ?? {}, add);
  for (const [name, entry] of Object.entries(exp.resume)) {
    checkTopology(`resume.${name}.args`, exp.trainer.args ?? {}, entry.args ?? {}, add);
  }
  if (exp.plan_sync) {
    checkTopology("plan_sync.target", exp.trainer.args ?? {}, exp.plan_sync.target, add);
  }

  // Converter and planner presence.
  const universal = Object.entries(exp.resume).find(([, entry]) => entry.from === "universal");
  if (universal && !converter) {
    add(
      "converter",
      `required: resume.${universal[0]} resumes from a universal checkpoint and the trainer is a ` +
        "command (add converter.command, e.g. ds_to_universal.py)",
    );
  }
  if (exp.plan_sync && !planner) {
    add("planner", "required: plan_sync needs a planner when the trainer is a command");
  }
  if (exp.plan_sync) {
    const seen = new Set<string>();
    exp.plan_sync.policies.forEach((policy, i) => {
      const path = `plan_sync.policies[${i}]`;
      if (seen.has(policy)) add(path, `duplicate policy ${policy}`);
      seen.add(policy);
      if (
        planner?.preset === "reference" &&
        !(REFERENCE_POLICIES as readonly string[]).includes(policy)
      ) {
        add(
          path,
          `unknown policy ${JSON.stringify(policy)}${didYouMean(policy, REFERENCE_POLICIES)}; ` +
            `the reference planner knows ${REFERENCE_POLICIES.join(", ")}`,
        );
      }
    });
  }

  // Per-program details: metrics, retry, code inputs, placeholders.
  const programs: [ProgramKind, ProcessEntry | undefined][] = [
    ["trainer", exp.trainer],
    ["converter", exp.converter],
    ["planner", exp.planner],
  ];
  for (const [kind, entry] of programs) {
    if (!entry) continue;
    checkMetrics(kind, entry, add);
    entry.retry?.on.forEach((pattern, i) => {
      const problem = regexProblem(pattern);
      if (problem) add(`${kind}.retry.on[${i}]`, problem);
    });
    entry.code_inputs?.forEach((input, i) => {
      if (input.startsWith("!") && input.slice(1).trim() === "") {
        add(`${kind}.code_inputs[${i}]`, "expected a command after '!'");
      }
    });
    checkTemplates(kind, entry, Object.keys(programArgs(exp, kind)), add);
  }
  for (const [name, entry] of Object.entries(exp.resume)) {
    const argKeys = Object.keys(mergeArgs(exp.trainer.args, entry.args));
    for (const [key, value] of Object.entries(entry.env ?? {})) {
      const problem = checkTemplate(value, { names: PLACEHOLDERS.trainer, argKeys });
      if (problem) add(`resume.${name}.env.${key}`, problem);
    }
  }

  // Phase names and comparisons.
  const phases = phaseNames(exp);
  const counts = new Map<string, number>();
  for (const phase of phases) counts.set(phase, (counts.get(phase) ?? 0) + 1);
  for (const name of Object.keys(exp.resume)) {
    if ((counts.get(`resume-${name}`) ?? 0) > 1) {
      add(
        `resume.${name}`,
        `phase resume-${name} clashes with a plan_sync phase; rename the resume`,
      );
    }
  }
  exp.compare?.forEach((entry, i) => {
    const at = `compare[${i}]`;
    for (const side of ["a", "b"] as const) {
      const phase = entry[side];
      if (!phases.includes(phase)) {
        add(
          `${at}.${side}`,
          `unknown phase ${JSON.stringify(phase)}${didYouMean(phase, phases)}; phases: ${
            phases.join(", ")
          }`,
        );
      }
    }
    if (entry.a === entry.b) add(at, `a and b are the same phase (${entry.a})`);
    if (entry.window) {
      if (entry.window.to > exp.schedule.steps) {
        add(
          `${at}.window.to`,
          `expected at most schedule.steps (${exp.schedule.steps}), got ${entry.window.to}`,
        );
      }
      if (entry.window.from > entry.window.to) {
        add(
          `${at}.window.from`,
          `expected at most window.to (${entry.window.to}), got ${entry.window.from}`,
        );
      }
    }
    if (entry.lane === "exact") {
      for (const key of ["rtol", "atol", "max_failures"] as const) {
        if (entry[key] !== undefined) add(`${at}.${key}`, "only used with lane: tolerance");
      }
    }
  });
  return errors;
}

type Add = (path: string, message: string) => void;

function checkProgramShape(kind: ProgramKind, entry: ProcessEntry, add: Add) {
  if (entry.preset !== undefined && entry.command !== undefined) {
    add(kind, "set either preset or command, not both");
  } else if (entry.preset === undefined && entry.command === undefined) {
    add(kind, "missing preset or command (e.g. preset: reference)");
  }
}

function checkReferenceArgs(at: string, args: TrainerArgs | undefined, add: Add) {
  if (!args) return;
  const known = Object.keys(REFERENCE_ARG_FLAGS);
  for (const key of Object.keys(args)) {
    if (!Object.hasOwn(REFERENCE_ARG_FLAGS, key)) {
      add(`${at}.${key}`, `unknown reference-trainer argument${didYouMean(key, known)}`);
    }
  }
  if (args.fault !== undefined && !(REFERENCE_FAULTS as readonly string[]).includes(args.fault)) {
    add(
      `${at}.fault`,
      `unknown fault ${JSON.stringify(args.fault)}${didYouMean(args.fault, REFERENCE_FAULTS)}; ` +
        `known faults: ${REFERENCE_FAULTS.join(", ")}`,
    );
  }
}

/**
 * EP size divides world size, and a placement descriptor is self-consistent and agrees with
 * ep_size. Problems are reported at the key `own` sets, so inherited values are not blamed twice.
 */
function checkTopology(at: string, inherited: TrainerArgs, own: TrainerArgs, add: Add) {
  const merged = mergeArgs(inherited, own);
  const blame = (key: string) => `${at}.${key}`;
  const origin = (key: string) => Object.hasOwn(own, key) ? "" : " (inherited from trainer.args)";
  if (merged.world_size !== undefined && merged.ep_size !== undefined) {
    if (
      (Object.hasOwn(own, "ep_size") || Object.hasOwn(own, "world_size")) &&
      merged.world_size % merged.ep_size !== 0
    ) {
      const key = Object.hasOwn(own, "ep_size") ? "ep_size" : "world_size";
      add(
        blame(key),
        `ep_size ${merged.ep_size}${
          origin("ep_size")
        } does not divide world_size ${merged.world_size}${origin("world_size")}`,
      );
    }
  }
  const inheritedPlacement = inherited.placement;
  if (
    isRecord(inheritedPlacement) && own.placement === undefined && own.ep_size !== undefined &&
    (inheritedPlacement as { ep_size: number }).ep_size !== own.ep_size
  ) {
    add(
      blame("ep_size"),
      `ep_size ${own.ep_size} disagrees with the placement inherited from trainer.args (ep_size ${
        (inheritedPlacement as { ep_size: number }).ep_size
      }); override placement too`,
    );
  }
  const placement = own.placement;
  if (isRecord(placement)) {
    const p = placement as {
      num_experts: number;
      ep_size: number;
      ranks: { rank: number; experts: number[] }[];
    };
    const where = `${at}.placement`;
    if (merged.ep_size !== undefined && p.ep_size !== merged.ep_size) {
      add(
        `${where}.ep_size`,
        `expected ${merged.ep_size} (ep_size${origin("ep_size")}), got ${p.ep_size}`,
      );
    }
    if (p.ranks.length !== p.ep_size) {
      add(
        `${where}.ranks`,
        `expected exactly ${p.ep_size} entries (ep_size), got ${p.ranks.length}`,
      );
    }
    const seenRanks = new Set<number>();
    const covered = new Set<number>();
    p.ranks.forEach((entry, i) => {
      if (entry.rank >= p.ep_size) {
        add(
          `${where}.ranks[${i}].rank`,
          `expected a rank below ep_size ${p.ep_size}, got ${entry.rank}`,
        );
      } else if (seenRanks.has(entry.rank)) {
        add(`${where}.ranks[${i}].rank`, `rank ${entry.rank} appears more than once`);
      }
      seenRanks.add(entry.rank);
      const local = new Set<number>();
      entry.experts.forEach((expert, j) => {
        if (expert >= p.num_experts) {
          add(
            `${where}.ranks[${i}].experts[${j}]`,
            `expected an expert id below num_experts ${p.num_experts}, got ${expert}`,
          );
        } else if (local.has(expert)) {
          add(`${where}.ranks[${i}].experts[${j}]`, `expert ${expert} appears twice on this rank`);
        }
        local.add(expert);
        covered.add(expert);
      });
    });
    const missing = [];
    for (let e = 0; e < p.num_experts; e++) if (!covered.has(e)) missing.push(e);
    if (missing.length > 0) {
      add(
        `${where}.ranks`,
        `no rank holds expert${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`,
      );
    }
  }
}

function checkMetrics(kind: ProgramKind, entry: ProcessEntry, add: Add) {
  const metrics = entry.metrics;
  if (!metrics) return;
  const at = `${kind}.metrics`;
  if (entry.preset === "reference" && metrics.format !== "jsonl") {
    add(`${at}.format`, `the reference preset writes jsonl, got ${describeValue(metrics.format)}`);
  }
  if (metrics.format === "log") {
    if (metrics.pattern === undefined) {
      add(`${at}.pattern`, "required when format is log (a regex with named groups step and loss)");
    } else {
      const problem = regexProblem(metrics.pattern);
      if (problem) add(`${at}.pattern`, problem);
      else {
        const groups = namedGroups(metrics.pattern);
        const missing = ["step", "loss"].filter((name) => !groups.includes(name));
        if (missing.length > 0) {
          add(
            `${at}.pattern`,
            `missing named group${missing.length > 1 ? "s" : ""} ${
              missing.map((name) => `(?<${name}>...)`).join(" and ")
            }`,
          );
        }
      }
    }
  } else if (metrics.pattern !== undefined) {
    add(`${at}.pattern`, `only used with format: log (format is ${metrics.format})`);
  }
  // csv_monitor's step column is global_samples unless told otherwise (ARCHITECTURE.md).
  const unit = metrics.step_unit ?? (metrics.format === "deepspeed-csv" ? "samples" : "step");
  if (unit === "samples") {
    if (metrics.format !== "deepspeed-csv") {
      add(`${at}.step_unit`, "samples is only used with format: deepspeed-csv");
    } else if (metrics.samples_per_step === undefined) {
      add(
        `${at}.samples_per_step`,
        "required: deepspeed-csv steps count samples (set the global batch size, or step_unit: step)",
      );
    }
  }
}

/** Why `pattern` is not a valid JavaScript regex, or undefined. */
function regexProblem(pattern: string): string | undefined {
  try {
    new RegExp(pattern);
    return undefined;
  } catch (error) {
    const python = /\(\?P</.test(pattern)
      ? " (write (?<name>...) rather than Python's (?P<name>...))"
      : "";
    const reason = (error as Error).message.replace(
      /^Invalid regular expression: \/.*\/[a-z]*: /,
      "",
    );
    return `invalid regular expression: ${reason}${python}`;
  }
}

function namedGroups(pattern: string): string[] {
  // A pattern that can match the empty string through an extra alternative exposes its groups.
  const match = new RegExp(`${pattern}|`).exec("");
  return Object.keys(match?.groups ?? {});
}

function checkTemplates(kind: ProgramKind, entry: ProcessEntry, argKeys: string[], add: Add) {
  const scope = { names: PLACEHOLDERS[kind], argKeys };
  const check = (path: string, template: string) => {
    const problem = checkTemplate(template, scope);
    if (problem) add(path, problem);
  };
  entry.command?.forEach((arg, i) => check(`${kind}.command[${i}]`, arg));
  for (const [key, value] of Object.entries(entry.env ?? {})) check(`${kind}.env.${key}`, value);
  if (entry.cwd !== undefined) check(`${kind}.cwd`, entry.cwd);
  if (entry.metrics?.path !== undefined) check(`${kind}.metrics.path`, entry.metrics.path);
}

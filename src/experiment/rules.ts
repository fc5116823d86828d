/**
 * Cross-field rules that a schema cannot express: save_at < steps, preset xor command,
 * preset arguments and faults (read from the preset descriptors), EP/world-size divisibility, converters and planners,
 * metrics patterns, comparisons naming real phases, retry regexes and `${placeholders}`. All
 * problems are returned together.
 *
 * @module
 */

import { didYouMean } from "./_did_you_mean.ts";
import { describeValue, isRecord } from "./_path.ts";
import type { ValidationError } from "./validation_errors.ts";
import { checkTemplate, PLACEHOLDERS, type ProgramKind } from "./placeholders.ts";
import { type PresetDescriptor, presetNamed } from "../presets/mod.ts";
import {
  deviceDemand,
  lastSave,
  mergeArgs,
  phaseGraph,
  programArgs,
  programEntry,
  readerPythonOf,
  resumeFromStep,
  saveSteps,
  trainerPreset,
} from "./plan/mod.ts";
import type { Experiment, ProcessEntry, TrainerArgs } from "./schema.ts";

/** Names of the phases an experiment produces, in run order (see {@link phaseGraph}). */
export function phaseNames(exp: Experiment): string[] {
  return phaseGraph(exp).map((node) => node.name);
}

/** Runs every cross-field rule; an empty list means the experiment is consistent. */
export function checkExperimentRules(exp: Experiment): ValidationError[] {
  const errors: ValidationError[] = [];
  const add = (path: string, message: string) => errors.push({ path, message });

  checkSaveSteps(exp, add);

  checkProgramShape("trainer", exp.trainer, add);
  if (exp.converter) checkProgramShape("converter", exp.converter, add);
  if (exp.planner) checkProgramShape("planner", exp.planner, add);

  const converter = programEntry(exp, "converter");
  const planner = programEntry(exp, "planner");
  const trainer = trainerPreset(exp);
  checkSchedule(exp, trainer, add);
  checkDevicePool(exp, add);

  checkPresetArgsAndTools(exp, trainer, planner, add);
  checkTopologies(exp, trainer, add);
  checkToolPresence(exp, converter, planner, add);
  checkProgramDetails(exp, add);
  checkPhasesAndComparisons(exp, add);
  return errors;
}

/** Preset arguments wherever they reach a preset's process, and each tool's preset fits its role. */
function checkPresetArgsAndTools(
  exp: Experiment,
  trainer: PresetDescriptor | undefined,
  planner: ProcessEntry | undefined,
  add: Add,
) {
  if (trainer) {
    checkPresetArgs(trainer, "trainer.args", exp.trainer.args, add);
    for (const key of trainer.requiredArgs ?? []) {
      if (exp.trainer.args?.[key] === undefined) {
        add(`trainer.args.${key}`, `required by the ${trainer.name} preset`);
      }
    }
    for (const [name, entry] of Object.entries(exp.resume)) {
      checkPresetArgs(trainer, `resume.${name}.args`, entry.args, add);
    }
    if (exp.trainer.topology_args) {
      add(
        "trainer.topology_args",
        `the ${trainer.name} preset declares its own topology arguments`,
      );
    }
  }
  const converterPreset = presetNamed(exp.converter?.preset);
  if (converterPreset) checkPresetArgs(converterPreset, "converter.args", exp.converter?.args, add);
  const plannerPreset = presetNamed(planner?.preset);
  const ownPlannerPreset = presetNamed(exp.planner?.preset);
  if (ownPlannerPreset) checkPresetArgs(ownPlannerPreset, "planner.args", exp.planner?.args, add);
  if (exp.plan_sync?.resume && trainer && !trainer.executesPlans) {
    add(
      "plan_sync.resume",
      `the ${trainer.name} trainer cannot resume by executing a plan; set plan_sync.resume: false ` +
        "(the plans are still made, verified and reported)",
    );
  }
  if (exp.plan_sync?.execute) checkPlanExecution(exp, trainer, add);
  const targetPreset = trainer ?? plannerPreset;
  if (exp.plan_sync && targetPreset) {
    checkPresetArgs(targetPreset, "plan_sync.target", exp.plan_sync.target, add);
  }
  for (const kind of ["converter", "planner"] as const) {
    const own = exp[kind];
    const preset = presetNamed(own?.preset);
    if (preset && !preset.tools.includes(kind)) {
      add(`${kind}.preset`, `the ${preset.name} preset has no ${kind}`);
    }
    if (own?.topology_args) add(`${kind}.topology_args`, "only used on the trainer");
  }
}

/** Topology consistency: each context as the process will see it. */
function checkTopologies(exp: Experiment, trainer: PresetDescriptor | undefined, add: Add) {
  checkTopology("trainer.args", {}, exp.trainer.args ?? {}, add);
  for (const [name, entry] of Object.entries(exp.resume)) {
    checkTopology(`resume.${name}.args`, exp.trainer.args ?? {}, entry.args ?? {}, add);
  }
  if (exp.plan_sync) {
    checkTopology("plan_sync.target", exp.trainer.args ?? {}, exp.plan_sync.target, add);
  }
  if (trainer?.launcher) checkLauncherNodes(exp, add);
}

/** A converter and a planner where the resumes and plan_sync need them; plan_sync's policies. */
function checkToolPresence(
  exp: Experiment,
  converter: ProcessEntry | undefined,
  planner: ProcessEntry | undefined,
  add: Add,
) {
  const plannerPreset = presetNamed(planner?.preset);
  const universal = Object.entries(exp.resume).find(([, entry]) => entry.from === "universal");
  if (universal && !converter) {
    add(
      "converter",
      `required: resume.${universal[0]} resumes from a universal checkpoint and the trainer is a ` +
        "command (add converter.command, e.g. ds_to_universal.py)",
    );
  }
  if (exp.plan_sync && !planner) {
    add("planner", "required: plan_sync needs a planner and the trainer brings none");
  }
  if (exp.plan_sync) {
    const seen = new Set<string>();
    exp.plan_sync.policies.forEach((policy, i) => {
      const path = `plan_sync.policies[${i}]`;
      if (seen.has(policy)) add(path, `duplicate policy ${policy}`);
      seen.add(policy);
      if (plannerPreset && !plannerPreset.policies.includes(policy)) {
        add(
          path,
          `unknown policy ${JSON.stringify(policy)}${
            didYouMean(policy, plannerPreset.policies)
          }; ` +
            `the ${plannerPreset.name} planner knows ${plannerPreset.policies.join(", ")}`,
        );
      }
    });
  }
}

/** Per-program details: metrics, retry, code inputs, placeholders. */
function checkProgramDetails(exp: Experiment, add: Add) {
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
    if (entry.checkpoint_tag !== undefined) {
      const problem = checkTemplate(entry.checkpoint_tag, {
        names: ["save_at", "steps", "seed", "experiment"],
        argKeys: [],
      });
      if (problem) add(`${kind}.checkpoint_tag`, problem);
      else if (/[\\/]/.test(entry.checkpoint_tag) || entry.checkpoint_tag.startsWith(".")) {
        add(`${kind}.checkpoint_tag`, "expected a folder name (no '/', not starting with '.')");
      }
    }
    if (entry.checkpoint_format !== undefined) {
      if (kind !== "trainer") {
        add(`${kind}.checkpoint_format`, "only the trainer's checkpoints are read back");
      } else if (entry.command && readerPythonOf(entry.command) === undefined) {
        add(
          `${kind}.command[0]`,
          "trainer.checkpoint_format reads the checkpoint with the Python beside the trainer's " +
            "program: expected a path into a venv's bin folder (e.g. .venv/bin/torchrun), got " +
            JSON.stringify(entry.command[0]),
        );
      }
    }
    entry.code_inputs?.forEach((input, i) => {
      if (input.startsWith("!") && input.slice(1).trim() === "") {
        add(`${kind}.code_inputs[${i}]`, "expected a command after '!'");
      }
    });
    // Optional `${args.x?}` may name an argument only some resumes set.
    const resumeKeys = kind === "trainer"
      ? Object.values(exp.resume).flatMap((r) => Object.keys(r.args ?? {}))
      : [];
    checkTemplates(kind, entry, Object.keys(programArgs(exp, kind)), add, resumeKeys);
  }
  for (const [name, entry] of Object.entries(exp.resume)) {
    const argKeys = Object.keys(mergeArgs(exp.trainer.args, entry.args));
    for (const [key, value] of Object.entries(entry.env ?? {})) {
      const problem = checkTemplate(value, { names: PLACEHOLDERS.trainer, argKeys });
      if (problem) add(`resume.${name}.env.${key}`, problem);
    }
  }
}

/** Phase names that clash, and comparisons that name unknown phases or bad windows. */
function checkPhasesAndComparisons(exp: Experiment, add: Add) {
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
}

type Add = (path: string, message: string) => void;

function checkProgramShape(kind: ProgramKind, entry: ProcessEntry, add: Add) {
  if (entry.preset !== undefined && entry.command !== undefined) {
    add(kind, "set either preset or command, not both");
  } else if (entry.preset === undefined && entry.command === undefined) {
    add(kind, "missing preset or command (e.g. preset: reference)");
  }
}

function checkPresetArgs(
  preset: PresetDescriptor,
  at: string,
  args: TrainerArgs | undefined,
  add: Add,
) {
  if (!args) return;
  const known = Object.keys(preset.args);
  for (const [key, value] of Object.entries(args)) {
    const spec = Object.hasOwn(preset.args, key) ? preset.args[key] : undefined;
    if (!spec) {
      add(`${at}.${key}`, `unknown ${preset.name}-preset argument${didYouMean(key, known)}`);
    } else if (spec.values && !spec.values.includes(value as string | number | boolean)) {
      add(
        `${at}.${key}`,
        `expected one of ${spec.values.map((v) => JSON.stringify(v)).join(", ")} for the ` +
          `${preset.name} preset, got ${describeValue(value)}`,
      );
    }
  }
  if (args.fault !== undefined && !preset.faults.includes(args.fault)) {
    add(
      `${at}.fault`,
      `unknown fault ${JSON.stringify(args.fault)}${didYouMean(args.fault, preset.faults)}; ` +
        `known faults: ${preset.faults.join(", ")}`,
    );
  }
}

/**
 * `schedule.save_at`: each step below `schedule.steps`, a list ascending and distinct; with several
 * saves the tag template names the step (else every save writes one folder); each resume's
 * `from_step` is one of the saves, and universal resumes share one (the one convert phase converts
 * that tag).
 */
function checkSaveSteps(exp: Experiment, add: Add) {
  const steps = saveSteps(exp.schedule);
  const list = typeof exp.schedule.save_at !== "number";
  steps.forEach((step, i) => {
    const at = list ? `schedule.save_at[${i}]` : "schedule.save_at";
    if (step >= exp.schedule.steps) {
      add(at, `expected less than schedule.steps (${exp.schedule.steps}), got ${step}`);
    } else if (i > 0 && step <= steps[i - 1]) {
      add(at, `expected ascending distinct steps, got ${step} after ${steps[i - 1]}`);
    }
  });
  const template = exp.trainer.checkpoint_tag ?? trainerPreset(exp)?.checkpointTag;
  if (steps.length > 1 && template !== undefined && !template.includes("${save_at}")) {
    add(
      exp.trainer.checkpoint_tag !== undefined ? "trainer.checkpoint_tag" : "schedule.save_at",
      `several saves need \${save_at} in the tag template (${JSON.stringify(template)}), ` +
        "or every save writes the same folder",
    );
  }
  const universal = new Map<number, string>();
  for (const [name, entry] of Object.entries(exp.resume)) {
    if (entry.from_step !== undefined && !steps.includes(entry.from_step)) {
      add(
        `resume.${name}.from_step`,
        `expected one of schedule.save_at (${steps.join(", ")}), got ${entry.from_step}`,
      );
      continue;
    }
    if (entry.from !== "universal") continue;
    const step = resumeFromStep(exp.schedule, entry);
    const other = [...universal].find(([s]) => s !== step);
    if (other !== undefined) {
      add(
        `resume.${name}.from_step`,
        `universal resumes share one convert phase: resume.${other[1]} converts step ` +
          `${other[0]}, this one needs step ${step} (default: the last save, ${
            lastSave(exp.schedule)
          })`,
      );
    }
    universal.set(step, name);
  }
}

/**
 * Gradient accumulation is declared once (schedule.grad_accum or the preset's argument, not two
 * different values); when steps count micro-batches, the save and the schedule end must fall on
 * an optimizer-step boundary, or every resume diverges whatever the checkpoint code does.
 */
function checkSchedule(exp: Experiment, preset: PresetDescriptor | undefined, add: Add) {
  const declared = exp.schedule.grad_accum;
  const fromArg = preset?.gradAccumArg ? exp.trainer.args?.[preset.gradAccumArg] : undefined;
  if (declared !== undefined && typeof fromArg === "number" && fromArg !== declared) {
    add(
      "schedule.grad_accum",
      `disagrees with trainer.args.${preset!.gradAccumArg} (${fromArg}); set one of them`,
    );
  }
  const accum = declared ?? (typeof fromArg === "number" ? fromArg : 1);
  if (exp.schedule.step_unit !== "micro_batch" || accum <= 1) return;
  const values = [
    ...saveSteps(exp.schedule).map((value, i) => ({
      value,
      at: typeof exp.schedule.save_at === "number" ? "schedule.save_at" : `schedule.save_at[${i}]`,
    })),
    { value: exp.schedule.steps, at: "schedule.steps" },
  ];
  for (const { value, at } of values) {
    if (value % accum !== 0) {
      add(
        at,
        `micro-batch ${value} is not on an optimizer-step boundary (gradient accumulation ` +
          `${accum}: use a multiple of ${accum}, e.g. ${Math.max(accum, value - (value % accum))})`,
      );
    }
  }
}

/** A device pool holds every training phase's world size, or the phase could never start. */
function checkDevicePool(exp: Experiment, add: Add) {
  if (!exp.devices) return;
  const pool = exp.devices.ids.length;
  const contexts = [
    { at: "trainer.args.world_size", args: exp.trainer.args ?? {} },
    ...Object.entries(exp.resume).map(([name, entry]) => ({
      at: `resume.${name}.args.world_size`,
      args: mergeArgs(exp.trainer.args, entry.args),
    })),
  ];
  for (const { at, args } of contexts) {
    const need = deviceDemand("trainer", args, exp.devices.kind);
    if (need > pool) {
      add(
        "devices.ids",
        `${pool} device(s) cannot hold ${at} ${need} (a phase takes one device per rank)`,
      );
    }
  }
}

/**
 * A launcher preset on several Slurm nodes starts world_size / nodes ranks per node: the node
 * count must divide every training phase's world_size. Reported where the node count is set.
 */
function checkLauncherNodes(exp: Experiment, add: Add) {
  const trainer = exp.trainer.executor
    ? { at: "trainer.executor", executor: exp.trainer.executor }
    : { at: "executor", executor: exp.executor };
  const contexts = [
    { what: "the trainer", args: exp.trainer.args ?? {}, ...trainer },
    ...Object.entries(exp.resume).map(([name, entry]) => ({
      what: `resume ${name}`,
      args: mergeArgs(exp.trainer.args, entry.args),
      ...(entry.executor ? { at: `resume.${name}.executor`, executor: entry.executor } : trainer),
    })),
  ];
  for (const { what, args, at, executor } of contexts) {
    if (executor.kind !== "slurm" || executor.srun === false) continue;
    const nodes = executor.nodes ?? 1;
    const worldSize = Number(args.world_size ?? 2);
    if (worldSize % nodes !== 0) {
      add(
        `${at}.nodes`,
        `${nodes} nodes do not divide world_size ${worldSize} of ${what} (the launcher ` +
          "starts world_size / nodes ranks on each node)",
      );
    }
  }
}

/**
 * EP size divides world size, and a placement descriptor is self-consistent and agrees with
 * ep_size. Problems are reported at the key `own` sets, so inherited values are not blamed twice.
 */
/**
 * `plan_sync.execute` needs a plan executor (the trainer's preset ships one) and a universal
 * resume on the plan's target topology, whose loaded state the executed plan is compared with.
 */
function checkPlanExecution(exp: Experiment, trainer: PresetDescriptor | undefined, add: Add) {
  if (!trainer?.tools.includes("executor")) {
    add(
      "plan_sync.execute",
      `${
        trainer ? `the ${trainer.name} preset` : "a command trainer"
      } has no plan executor; set plan_sync.execute: false`,
    );
    return;
  }
  const keys = Object.entries(trainer.args).filter(([, a]) => a.topology).map(([k]) => k);
  const topology = (args: TrainerArgs) =>
    JSON.stringify(keys.map((k) => mergeArgs(exp.trainer.args, args)[k] ?? null));
  const target = topology(exp.plan_sync!.target);
  const reshard = Object.values(exp.resume).some((r) =>
    r.from === "universal" && topology(r.args ?? {}) === target
  );
  if (!reshard) {
    add(
      "plan_sync.execute",
      "needs a universal resume on the plan's target topology to compare the executed plan with: " +
        `add resume.<name>: {from: universal, args: ${JSON.stringify(exp.plan_sync!.target)}}`,
    );
  }
}

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
  const preset = presetNamed(entry.preset);
  const formats = preset ? [preset.metricsFormat, ...preset.otherMetricsFormats ?? []] : [];
  if (preset && !formats.includes(metrics.format)) {
    add(
      `${at}.format`,
      `the ${preset.name} preset writes ${formats.join(" or ")}, got ${
        describeValue(metrics.format)
      }`,
    );
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
  // csv_monitor's step column is global_samples unless told otherwise (docs/parity.md).
  const unit = metrics.step_unit ?? (metrics.format === "deepspeed-csv" ? "samples" : "step");
  // DeepSpeed's monitors (csv and TensorBoard) both log against global samples.
  if (unit === "samples") {
    if (metrics.format !== "deepspeed-csv" && metrics.format !== "tensorboard") {
      add(`${at}.step_unit`, "samples is only used with format: deepspeed-csv or tensorboard");
    } else if (metrics.samples_per_step === undefined) {
      add(
        `${at}.samples_per_step`,
        `required: ${metrics.format} steps count samples (set the global batch size, or ` +
          "step_unit: step)",
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

function checkTemplates(
  kind: ProgramKind,
  entry: ProcessEntry,
  argKeys: string[],
  add: Add,
  optionalArgKeys: string[] = [],
) {
  const scope = { names: PLACEHOLDERS[kind], argKeys, optionalArgKeys };
  const check = (path: string, template: string) => {
    const problem = checkTemplate(template, scope);
    if (problem) add(path, problem);
  };
  entry.command?.forEach((arg, i) => check(`${kind}.command[${i}]`, arg));
  for (const [key, value] of Object.entries(entry.env ?? {})) check(`${kind}.env.${key}`, value);
  if (entry.cwd !== undefined) check(`${kind}.cwd`, entry.cwd);
  if (entry.metrics?.path !== undefined) check(`${kind}.metrics.path`, entry.metrics.path);
}

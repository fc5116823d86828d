/**
 * The phase graph: which fresh-process phases an experiment produces, in run order, what each
 * consumes, which program runs it and with which arguments. The one place the phase list is
 * built; the rules check `compare:` against it and {@link resolvePlan} turns it into specs.
 * Pure: no process is started and nothing is read or written.
 *
 * @module
 */

import { type PresetDescriptor, presetNamed } from "../../presets/mod.ts";
import {
  type Calibration,
  DEFAULT_PHASE_TIMEOUT_S,
  type PhaseRole,
  type PhaseTool,
  type ResumeKind,
} from "../../types/mod.ts";
import type { Experiment, ProcessEntry, ResumeEntry, TrainerArgs } from "../schema.ts";
import { lastSave, resumeFromStep, saveSteps } from "./save_steps.ts";

/** One node of the phase graph. */
export interface PhaseNode {
  /** Unique phase name: `baseline`, `split`, `convert`, `resume-<name>`, `plan-<policy>`... */
  name: string;
  /** What the phase does. */
  role: PhaseRole;
  /** Program that runs it. */
  tool: PhaseTool;
  /** The configured entry of that program (undefined only in an invalid experiment). */
  entry: ProcessEntry | undefined;
  /** Phases whose outputs it needs (all must end ok first). */
  consumes: string[];
  /** Arguments in force (see {@link programArgs}; resumes add their overrides). */
  args: TrainerArgs;
  /** Last optimizer step this phase runs. */
  stopAt: number;
  /** Steps after which the phase saves, ascending (split only; it stops after the last). */
  saveSteps?: number[];
  /**
   * The saved step a phase starts from (resumes and calibrations) or converts (convert): the
   * resume's `from_step`, default the last save.
   */
  fromStep?: number;
  /** For training phases that start from a checkpoint. */
  resumeKind?: ResumeKind;
  /** The resume entry of a `resume-<name>` phase. */
  resume?: ResumeEntry;
  /** Its `<name>`. */
  resumeName?: string;
  /** Replica policy of plan phases and plan resumes. */
  policy?: string;
  /** Calibration phases: the resume they repeat and the LR error they apply. */
  calibration?: Calibration;
}

/** The phase of resume `resume`'s calibration at relative LR error `lrError`. */
export function calibrationPhaseName(resume: string, lrError: number): string {
  return `calibrate-${resume}-lr${lrError.toExponential()}`;
}

/** `override` over `base` (shallow: a key in `override` replaces the same key of `base`). */
export function mergeArgs(
  base: TrainerArgs | undefined,
  override: TrainerArgs | undefined,
): TrainerArgs {
  return { ...(base ?? {}), ...(override ?? {}) };
}

/** The preset of the trainer, when it is one. */
export function trainerPreset(exp: Experiment): PresetDescriptor | undefined {
  return presetNamed(exp.trainer.preset);
}

/**
 * The program entry a tool runs: the experiment's own, else (converter, planner, plan executor)
 * the trainer's preset when that preset provides the tool, else undefined. A plan executor has
 * no entry of its own in experiment files: only a preset ships one.
 */
export function programEntry(exp: Experiment, tool: PhaseTool): ProcessEntry | undefined {
  if (tool === "trainer") return exp.trainer;
  const own = tool === "converter" ? exp.converter : tool === "planner" ? exp.planner : undefined;
  if (own) return own;
  const preset = trainerPreset(exp);
  return preset?.tools.includes(tool)
    ? { preset: preset.name, timeout: DEFAULT_PHASE_TIMEOUT_S }
    : undefined;
}

/** The presets an experiment's programs use (each once). */
export function presetsUsed(exp: Experiment): PresetDescriptor[] {
  const names = (["trainer", "converter", "planner"] as const)
    .map((tool) => programEntry(exp, tool)?.preset);
  return [...new Set(names)].flatMap((name) => presetNamed(name) ?? []);
}

/**
 * The arguments every phase of a program sees, so `${args.<key>}` is known in all of them: the
 * trainer's own `args` (resume phases only add to them); for the converter `trainer.args` merged
 * with `converter.args`; for the planner `trainer.args`, then `plan_sync.target`, then
 * `planner.args`.
 */
export function programArgs(exp: Experiment, tool: PhaseTool): TrainerArgs {
  const trainer = exp.trainer.args ?? {};
  if (tool === "trainer") return { ...trainer };
  if (tool === "converter") return mergeArgs(trainer, exp.converter?.args);
  if (tool === "executor") return mergeArgs(trainer, exp.plan_sync?.target);
  return mergeArgs(mergeArgs(trainer, exp.plan_sync?.target), exp.planner?.args);
}

/**
 * The phase whose checkpoint the resumes, the converter and the planner read: `split`, or
 * `baseline` under `schedule.split: fused` (the baseline saves at `save_at` and trains on).
 */
export function checkpointPhase(exp: Experiment): "split" | "baseline" {
  return exp.schedule.split === "fused" ? "baseline" : "split";
}

/**
 * Builds the phase graph of an experiment, in execution order: baseline, split (none when
 * fused: the baseline saves), native
 * resumes, convert (when a resume is universal), universal resumes, plans, their executions on
 * the checkpoint's bytes and plan resumes,
 * then the noise-floor repeats (so a verdict on the resumes comes before the extra cost), then
 * the calibration resumes of `sensitivity`.
 * The plan path reads the native checkpoint, so plan sync alone adds no convert phase.
 */
export function phaseGraph(exp: Experiment): PhaseNode[] {
  const baseArgs = exp.trainer.args ?? {};
  const steps = exp.schedule.steps;
  const saves = saveSteps(exp.schedule);
  const saveAt = lastSave(exp.schedule);
  const train = (name: string, role: PhaseRole, extra: Partial<PhaseNode> = {}): PhaseNode => ({
    name,
    role,
    tool: "trainer",
    entry: exp.trainer,
    consumes: [],
    args: baseArgs,
    stopAt: steps,
    ...extra,
  });
  // A fused split (issue 37): the baseline saves after each save step and trains on; no split phase.
  const fused = exp.schedule.split === "fused";
  const saver = checkpointPhase(exp);
  const nodes: PhaseNode[] = [train("baseline", "baseline", fused ? { saveSteps: saves } : {})];
  if (!fused) nodes.push(train("split", "split", { stopAt: saveAt, saveSteps: saves }));

  const resumes = Object.entries(exp.resume);
  const resumeNode = (name: string, resume: ResumeEntry, consumes: string[]) =>
    train(`resume-${name}`, "resume", {
      consumes,
      args: mergeArgs(baseArgs, resume.args),
      resumeKind: resume.from,
      resume,
      resumeName: name,
      fromStep: resumeFromStep(exp.schedule, resume),
    });
  for (const [name, r] of resumes) {
    if (r.from === "native") nodes.push(resumeNode(name, r, [saver]));
  }
  const universal = resumes.find(([, r]) => r.from === "universal");
  if (universal) {
    // One convert phase: the rules make every universal resume start from the same save.
    nodes.push({
      name: "convert",
      role: "convert",
      tool: "converter",
      entry: programEntry(exp, "converter"),
      consumes: [saver],
      args: programArgs(exp, "converter"),
      stopAt: saveAt,
      fromStep: resumeFromStep(exp.schedule, universal[1]),
    });
    for (const [name, r] of resumes) {
      if (r.from === "universal") nodes.push(resumeNode(name, r, ["convert"]));
    }
  }
  if (exp.plan_sync) nodes.push(...planSyncNodes(exp, exp.plan_sync, train, saver, saveAt));
  for (let k = 1; k <= exp.noise_floor.repeats; k++) {
    nodes.push(train(`baseline-repeat-${k}`, "repeat"));
  }
  // Calibrations last: they measure what a lane could catch and never change the verdict.
  nodes.push(...calibrationNodes(exp, nodes));
  return nodes;
}

/** Makes a trainer phase with the experiment's defaults; `extra` overrides them. */
type TrainPhase = (name: string, role: PhaseRole, extra?: Partial<PhaseNode>) => PhaseNode;

/** The plan_sync phases: each policy's plan, then their executions, then the plan resumes. */
function planSyncNodes(
  exp: Experiment,
  planSync: NonNullable<Experiment["plan_sync"]>,
  train: TrainPhase,
  saver: string,
  saveAt: number,
): PhaseNode[] {
  const nodes: PhaseNode[] = [];
  const planner = programEntry(exp, "planner");
  const plannerArgs = programArgs(exp, "planner");
  for (const policy of planSync.policies) {
    nodes.push({
      name: `plan-${policy}`,
      role: "plan",
      tool: "planner",
      entry: planner,
      consumes: [saver],
      args: plannerArgs,
      policy,
      stopAt: saveAt,
    });
  }
  if (planSync.execute) {
    const executor = programEntry(exp, "executor");
    for (const policy of planSync.policies) {
      nodes.push({
        name: `execute-plan-${policy}`,
        role: "execute",
        tool: "executor",
        entry: executor,
        consumes: [`plan-${policy}`, saver],
        args: programArgs(exp, "executor"),
        policy,
        stopAt: saveAt,
      });
    }
  }
  if (planSync.resume) {
    const targetArgs = mergeArgs(exp.trainer.args ?? {}, planSync.target);
    for (const policy of planSync.policies) {
      nodes.push(train(`resume-plan-${policy}`, "resume", {
        consumes: [`plan-${policy}`, saver],
        args: targetArgs,
        resumeKind: "plan",
        policy,
        fromStep: saveAt,
      }));
    }
  }
  return nodes;
}

/** The calibration resumes of `sensitivity`, each a copy of the resume it calibrates. */
function calibrationNodes(exp: Experiment, nodes: readonly PhaseNode[]): PhaseNode[] {
  const resumes = Object.entries(exp.resume);
  const out: PhaseNode[] = [];
  const resumeNodes = new Map(nodes.flatMap((n) => n.resumeName ? [[n.resumeName, n]] : []));
  for (const [name, r] of resumes) {
    const resume = resumeNodes.get(name)!;
    for (const lrError of r.sensitivity?.lr_error ?? []) {
      out.push({
        ...resume,
        name: calibrationPhaseName(name, lrError),
        role: "calibrate",
        calibration: { of: resume.name, lr_error: lrError },
      });
    }
  }
  return out;
}

/** Every phase that (transitively) consumes `name`. */
export function dependentsOf(nodes: readonly { name: string; consumes: string[] }[], name: string) {
  const out = new Set<string>();
  let grew = true;
  while (grew) {
    grew = false;
    for (const n of nodes) {
      if (out.has(n.name)) continue;
      if (n.consumes.some((c) => c === name || out.has(c))) {
        out.add(n.name);
        grew = true;
      }
    }
  }
  return out;
}

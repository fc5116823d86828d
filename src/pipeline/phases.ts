/**
 * The phase graph: which fresh-process phases an experiment needs, what each consumes and
 * produces, and the placeholder values each one's command sees. Pure: no process is started and
 * nothing is written here, so the graph can be tested and cached on.
 *
 * @module
 */

import { effectiveConverter, effectivePlanner, mergeArgs, programArgs } from "../experiment/mod.ts";
import type { Experiment, ProcessEntry, TrainerArgs } from "../experiment/schema.ts";
import type { PhaseRole } from "./summary.ts";

/** Which configured program runs a phase. */
export type PhaseTool = "trainer" | "converter" | "planner";

/** How a training phase starts. */
export type ResumeKind = "native" | "universal" | "plan";

/** One node of the phase graph. */
export interface PhaseNode {
  /** Unique phase name: `baseline`, `split`, `convert`, `resume-<name>`, `plan-<policy>`... */
  name: string;
  /** What the phase does. */
  role: PhaseRole;
  /** Program that runs it. */
  tool: PhaseTool;
  /** The configured entry of that program. */
  entry: ProcessEntry;
  /** Phases whose outputs it needs (all must end ok first). */
  consumes: string[];
  /** Trainer arguments in force (trainer.args merged with the phase's overrides). */
  args: TrainerArgs;
  /** Canonical topology key; equal keys mean the same topology. */
  topology: string;
  /** For training phases that start from a checkpoint. */
  resumeKind?: ResumeKind;
  /** Resume entry name (`native` for `resume-native`). */
  resumeName?: string;
  /** Lane the resume asks for against the baseline. */
  lane?: "exact" | "tolerance";
  /** Extra environment of the resume entry. */
  extraEnv?: Record<string, string>;
  /** Replica policy of a plan phase. */
  policy?: string;
  /** Last optimizer step this phase runs. */
  stopAt: number;
  /** Step after which the phase saves (split only). */
  saveAt?: number;
}

const TOPOLOGY_KEYS = ["world_size", "ep_size", "placement", "zero_stage"] as const;

/** Stable JSON with sorted object keys, for keys and hashes. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * Topology key of a set of trainer arguments. For the reference preset only the layout keys
 * count (a fault or precision is not a topology); for a command trainer every argument does,
 * since the harness cannot know which of them change the layout.
 */
export function topologyKey(args: TrainerArgs, reference: boolean): string {
  if (!reference) return canonicalJson(args);
  const picked: Record<string, unknown> = {};
  for (const k of TOPOLOGY_KEYS) if (args[k] !== undefined) picked[k] = args[k];
  return canonicalJson(picked);
}

/**
 * Builds the phase graph of an experiment, in execution order: baseline, split, native
 * resumes, convert, universal resumes, plans and plan resumes, then the noise-floor repeats
 * (last, so a verdict on the resumes comes before the extra cost is paid).
 */
export function buildPhaseGraph(exp: Experiment): PhaseNode[] {
  const reference = exp.trainer.preset === "reference";
  const baseArgs = exp.trainer.args ?? {};
  const savedTopology = topologyKey(baseArgs, reference);
  const steps = exp.schedule.steps;
  const train = (
    name: string,
    role: PhaseRole,
    extra: Partial<PhaseNode> = {},
  ): PhaseNode => ({
    name,
    role,
    tool: "trainer",
    entry: exp.trainer,
    consumes: [],
    args: baseArgs,
    topology: savedTopology,
    stopAt: steps,
    ...extra,
  });

  const nodes: PhaseNode[] = [train("baseline", "baseline")];
  nodes.push(
    train("split", "split", { stopAt: exp.schedule.save_at, saveAt: exp.schedule.save_at }),
  );

  const resumes = Object.entries(exp.resume);
  const resumeNode = (name: string, r: (typeof resumes)[number][1], consumes: string[]) => {
    const args = mergeArgs(baseArgs, r.args);
    return train(`resume-${name}`, "resume", {
      consumes,
      args,
      topology: topologyKey(args, reference),
      resumeKind: r.from,
      resumeName: name,
      lane: r.lane,
      extraEnv: r.env,
    });
  };
  for (const [name, r] of resumes) {
    if (r.from === "native") nodes.push(resumeNode(name, r, ["split"]));
  }
  if (resumes.some(([, r]) => r.from === "universal")) {
    nodes.push({
      name: "convert",
      role: "convert",
      tool: "converter",
      entry: effectiveConverter(exp)!,
      consumes: ["split"],
      args: programArgs(exp, "converter"),
      topology: savedTopology,
      stopAt: exp.schedule.save_at,
    });
    for (const [name, r] of resumes) {
      if (r.from === "universal") nodes.push(resumeNode(name, r, ["convert"]));
    }
  }
  if (exp.plan_sync) {
    const targetArgs = mergeArgs(baseArgs, exp.plan_sync.target);
    const targetTopology = topologyKey(targetArgs, reference);
    const plannerArgs = programArgs(exp, "planner");
    for (const policy of exp.plan_sync.policies) {
      nodes.push({
        name: `plan-${policy}`,
        role: "plan",
        tool: "planner",
        entry: effectivePlanner(exp)!,
        consumes: ["split"],
        args: plannerArgs,
        topology: targetTopology,
        policy,
        stopAt: exp.schedule.save_at,
      });
    }
    if (exp.plan_sync.resume) {
      for (const policy of exp.plan_sync.policies) {
        nodes.push(train(`resume-plan-${policy}`, "resume", {
          consumes: [`plan-${policy}`, "split"],
          args: targetArgs,
          topology: targetTopology,
          resumeKind: "plan",
          resumeName: `plan-${policy}`,
          policy,
        }));
      }
    }
  }
  for (let k = 1; k <= exp.noise_floor.repeats; k++) {
    nodes.push(train(`baseline-repeat-${k}`, "repeat"));
  }
  return nodes;
}

/** Every phase that (transitively) consumes `name`. */
export function dependentsOf(nodes: PhaseNode[], name: string): Set<string> {
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

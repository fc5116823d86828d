/**
 * `parity plan`: the resolved phase plan of an experiment as the next run would execute it —
 * each phase's argv, environment (secrets redacted), working folder, what it consumes, its lane,
 * the variables its cache key leaves out (and why) and whether the cache would reuse it — without launching or writing anything.
 *
 * @module
 */

import { join, relative } from "node:path";
import { redactEnv } from "../../process/mod.ts";
import { phaseDevices, phaseSteps, type PlannedBill, plannedBill, savingText } from "./run_bill.ts";
import {
  type BillSaving,
  type DevicePoolSpec,
  type PhaseSpec,
  placePlan,
  type ResolvedPlan,
  savesCheckpoint,
} from "../../types/mod.ts";
import {
  cacheKeyEnv,
  computeKeys,
  experimentFolderName,
  findCachedPhase,
  type KeyLeftOut,
  listRuns,
  listSuiteRuns,
} from "../store/mod.ts";

/** Stand-in for the run folder the next run will create (its id is only known then). */
const NEXT_RUN = "<next-run>";

/** One phase as the preview shows it. */
export interface PhasePreview {
  /** Phase name. */
  name: string;
  /** What it does. */
  role: PhaseSpec["role"];
  /** Phases it consumes. */
  consumes: string[];
  /** Its argv, with the run folder written as `<run>`. */
  argv: string[];
  /** Variables set on top of the harness's environment, secrets redacted. */
  env: Record<string, string>;
  /** Working folder. */
  cwd: string;
  /** The declared topology. */
  topology: Record<string, unknown>;
  /** Resumes: lane against the baseline and why. */
  lane?: PhaseSpec["lane"];
  /** Its cache key. */
  cache_key: string;
  /** Variables of `env` its cache key leaves out, each with the reason (empty when none). */
  key_left_out: KeyLeftOut[];
  /** Where it runs, unless a local child (absent then, as in earlier previews). */
  executor?: PhaseSpec["executor"];
  /** The earlier run folder it would be reused from, or null when it would run. */
  cached_from: string | null;
}

/** The whole preview. */
export interface PlanPreview {
  /** Experiment name. */
  experiment: string;
  /** The results folder of the experiment. */
  experiment_dir: string;
  /** Phases in run order. */
  phases: PhasePreview[];
  /** The bill before anything runs: the work planned, and what would train after the cache. */
  bill: PlannedBill & {
    /** Step-equivalents of the phases the cache would not reuse. */
    to_train_step_equivalents: number;
    /**
     * An estimate before anything runs: what the cache and sharing would save, in device-seconds
     * from the walls those phases took where they ran × their devices; and fusing's saving,
     * priced from an earlier baseline's wall where one exists (else step-equivalents only).
     */
    saving_estimate: { cached: BillSaving; shared: BillSaving; fused?: BillSaving };
    /** The device pool (`devices:`), when declared. */
    devices?: DevicePoolSpec;
  };
}

/** Options of {@link previewPlan}. */
export interface PreviewOptions {
  /** Results root. */
  resultsDir: string;
  /** Folder the plan's relative code inputs resolve against (the experiment file's). */
  baseDir: string;
  /** Environment of the code inputs' `!commands` (the plan is resolved already). */
  harnessEnv: Record<string, string>;
}

/**
 * Places a resolved plan (not yet placed) where the next run would and looks each phase up in
 * the cache.
 */
export async function previewPlan(
  resolved: ResolvedPlan,
  options: PreviewOptions,
): Promise<PlanPreview> {
  const experimentDir = join(options.resultsDir, experimentFolderName(resolved.experiment));
  const runDir = join(experimentDir, NEXT_RUN);
  const plan = placePlan(resolved, runDir);
  const keys = await computeKeys(plan.phases, options.baseDir, options.harnessEnv);
  const local = (text: string) => text.replaceAll(runDir, "<run>");
  const phases: PhasePreview[] = [];
  const walls = new Map<string, { wall: number; shared: boolean }>();
  const runs = await listRuns(experimentDir);
  const suiteRuns = await listSuiteRuns(options.resultsDir, experimentDir);
  for (const spec of plan.phases) {
    const key = keys.get(spec.name)!;
    const own = await findCachedPhase(runs, spec.name, key, runDir);
    // As the run does: another experiment of the results folder may hold the same phase.
    const hit = own && !own.artifactsMissing
      ? own
      : await findCachedPhase(suiteRuns, spec.name, key, runDir);
    phases.push({
      name: spec.name,
      role: spec.role,
      consumes: spec.consumes,
      argv: spec.argv.map(local),
      env: Object.fromEntries(Object.entries(redactEnv(spec.env)).map(([k, v]) => [k, local(v)])),
      cwd: local(spec.cwd),
      topology: spec.topology,
      ...(spec.lane ? { lane: spec.lane } : {}),
      cache_key: key,
      key_left_out: cacheKeyEnv(spec.keyed.env).leftOut,
      ...(spec.executor.kind !== "local" ? { executor: spec.executor } : {}),
      cached_from: hit && !hit.artifactsMissing ? hit.runDir : null,
    });
    if (hit && !hit.artifactsMissing) {
      walls.set(spec.name, {
        wall: hit.record.reused_wall_s ?? hit.record.wall_s,
        shared: hit !== own,
      });
    }
  }
  const toRun = new Set(phases.filter((p) => p.cached_from === null).map((p) => p.name));
  const bill = {
    ...plannedBill(plan.phases, plan.judge.saveAt),
    to_train_step_equivalents: plan.phases.filter((spec) => toRun.has(spec.name))
      .reduce((a, spec) => a + phaseSteps(spec, plan.judge.saveAt), 0),
    saving_estimate: savingEstimate(plan.phases, walls, plan.judge.saveAt),
    ...(plan.devices ? { devices: plan.devices } : {}),
  };
  return { experiment: plan.experiment, experiment_dir: experimentDir, phases, bill };
}

/** The preview as text for a person: one block per phase. */
export function formatPlanPreview(preview: PlanPreview): string {
  const cwd = Deno.cwd();
  const where = (path: string) => relative(cwd, path) || path;
  const lines = [
    `experiment ${preview.experiment}: ${preview.phases.length} phases, ` +
    `<run> = ${where(join(preview.experiment_dir, NEXT_RUN))}`,
    billPreviewLine(preview.bill),
  ];
  for (const [i, p] of preview.phases.entries()) {
    const cache = p.cached_from ? `cached from ${where(p.cached_from)}` : "runs";
    lines.push("", `[${i + 1}/${preview.phases.length}] ${p.name} (${p.role}) — ${cache}`);
    if (p.consumes.length > 0) lines.push(`  consumes: ${p.consumes.join(", ")}`);
    if (Object.keys(p.topology).length > 0) {
      lines.push(`  topology: ${JSON.stringify(p.topology)}`);
    }
    if (p.lane) lines.push(`  lane vs baseline: ${p.lane.lane} (${p.lane.reason})`);
    if (p.executor) lines.push(`  executor: ${p.executor.kind} ${JSON.stringify(p.executor)}`);
    lines.push(`  cwd: ${p.cwd}`);
    lines.push(`  argv: ${p.argv.map(quoteArg).join(" ")}`);
    for (const [k, v] of Object.entries(p.env).sort(([a], [b]) => a.localeCompare(b))) {
      if (v !== "") lines.push(`  env ${k}=${quoteArg(v)}`);
    }
    for (const { name, reason } of p.key_left_out) {
      lines.push(`  not in the cache key: ${name} (${reason})`);
    }
  }
  return lines.join("\n");
}

/** The saving estimate of {@link previewPlan}: reused phases' earlier walls × their devices. */
function savingEstimate(
  specs: readonly PhaseSpec[],
  walls: ReadonlyMap<string, { wall: number; shared: boolean }>,
  saveAt: number,
): PlanPreview["bill"]["saving_estimate"] {
  const saving = (shared: boolean): BillSaving => {
    const reused = specs.filter((spec) => walls.get(spec.name)?.shared === shared);
    return {
      phases: reused.length,
      step_equivalents: reused.reduce((a, spec) => a + phaseSteps(spec, saveAt), 0),
      device_seconds: Math.round(
        reused.reduce((a, spec) => a + walls.get(spec.name)!.wall * phaseDevices(spec), 0) * 1000,
      ) / 1000,
    };
  };
  const baseline = specs.find((spec) => spec.role === "baseline" && savesCheckpoint(spec));
  const earlier = baseline && walls.get(baseline.name);
  const fused = baseline === undefined ? undefined : {
    phases: 1,
    step_equivalents: saveAt,
    ...(earlier
      ? {
        device_seconds: Math.round(
          earlier.wall * (saveAt / baseline.stopAt) * phaseDevices(baseline) * 1000,
        ) / 1000,
      }
      : {}),
  };
  return { cached: saving(false), shared: saving(true), ...(fused ? { fused } : {}) };
}

function billPreviewLine(bill: PlanPreview["bill"]): string {
  const pool = bill.devices
    ? `pool ${bill.devices.kind} [${bill.devices.ids.join(",")}]`
    : "no device pool (one phase at a time unless parallel is set)";
  const { cached, shared, fused } = bill.saving_estimate;
  const saved = (
    [["cache", cached], ["sharing", shared], ["fusing", fused]] as const
  ).flatMap(([what, s]) => s !== undefined && s.phases > 0 ? [`${what} ${savingText(s)}`] : []);
  return `bill: ${bill.step_equivalents} step-equivalents planned, ` +
    `${bill.to_train_step_equivalents} to train after the cache; critical path ` +
    `${bill.critical_path_steps} (${bill.critical_path.join(" → ")}); widest phase ` +
    `${bill.widest_phase_devices} devices; ${pool}` +
    (saved.length > 0
      ? `; estimated savings (earlier walls × devices; fusing priced only once a baseline ` +
        `has run): ${saved.join(", ")}`
      : "");
}

/** An argument as a person would type it (for reading only: argv never goes through a shell). */
function quoteArg(arg: string): string {
  return /^[\w@%+=:,./<>-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

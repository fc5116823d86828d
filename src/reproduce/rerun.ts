/**
 * `parity rerun <run-dir>`: replays every phase of a finished run from its
 * `experiment.resolved.yaml` and manifest alone, with the cache bypassed, into a new run folder
 * of the same experiment, then compares each training phase's metrics with the stored ones bit
 * for bit. REPRODUCED when all are identical; DRIFTED names the first differing step per phase
 * and every environment difference the two manifests show. The verdict is written to
 * `rerun.json` in the new run folder.
 *
 * @module
 */

import { join, relative } from "node:path";
import { resolvePlan } from "../experiment/mod.ts";
import { readMetrics } from "../metrics/mod.ts";
import { type Manifest, writeJsonAtomic } from "../pipeline/store/mod.ts";
import { type Progress, runExperiment } from "../pipeline/running/mod.ts";
import { type PhaseSpec, placePlan, type RunSummary } from "../types/mod.ts";
import {
  judgeRerun,
  type ReproductionOutcome,
  RERUN_EXIT_CODES,
  type RerunVerdict,
} from "../parity/mod.ts";
import { diffManifests, type EnvironmentDifference } from "./manifest_diff.ts";
import { diffSeries, type SeriesDifference } from "./metrics_diff.ts";
import { readStoredPlan, readStoredRun } from "./stored_run.ts";

export { RERUN_EXIT_CODES, type RerunVerdict };

/** One training phase, stored vs rerun. */
export interface PhaseReproduction extends Partial<SeriesDifference> {
  /** Phase name. */
  phase: string;
  /** `identical`, `differs`, or why it was not compared. */
  outcome: ReproductionOutcome;
  /** Why it was not compared, or how the rerun failed. */
  note?: string;
}

/** The result of a rerun (also `rerun.json`). */
export interface RerunResult {
  /** Verdict. */
  verdict: RerunVerdict;
  /** Exit code it maps to. */
  exit_code: number;
  /** The replayed run folder. */
  source_run: string;
  /** The new run folder. */
  rerun_run: string;
  /** Verdict of the stored run and of the rerun. */
  run_verdicts: { stored: string | null; rerun: string };
  /** Training phases in plan order. */
  phases: PhaseReproduction[];
  /** Environment differences between the two manifests (also listed when metrics match). */
  environment: EnvironmentDifference[];
}

/** How to rerun. */
export interface RerunOptions {
  /** Progress sink of the replayed run. */
  progress: Progress;
  /** Environment of the rerun (`${env.NAME}`, code inputs). */
  harnessEnv: Record<string, string>;
  /** Goldens root for `golden: true` experiments. */
  goldensDir?: string;
  /** Wait for another run of the experiment instead of failing. */
  wait?: boolean;
}

function statusOf(summary: RunSummary | undefined, phase: string): string | undefined {
  return summary?.phases.find((p) => p.name === phase)?.status;
}

async function comparePhase(
  spec: PhaseSpec,
  stored: { runDir: string; summary?: RunSummary; phases: readonly PhaseSpec[] },
  rerun: { runDir: string; summary: RunSummary },
): Promise<PhaseReproduction> {
  const phase = spec.name;
  if (statusOf(stored.summary, phase) !== "ok") {
    return { phase, outcome: "not-compared", note: "the stored phase did not complete" };
  }
  const status = statusOf(rerun.summary, phase);
  if (status !== "ok") {
    const message = rerun.summary.phases.find((p) => p.name === phase)?.message;
    return { phase, outcome: "rerun-failed", note: `${status}${message ? `: ${message}` : ""}` };
  }
  const metrics = spec.metrics!;
  // Where the stored run's plan read this phase's metrics (a phase it lacked: the same place).
  const storedPath = stored.phases.find((p) => p.name === phase)?.metrics?.path ??
    metrics.path.replace(rerun.runDir, stored.runDir);
  const [a, b] = await Promise.all([
    readMetrics(storedPath, { ...metrics }),
    readMetrics(metrics.path, { ...metrics }),
  ]);
  const diff = diffSeries(a, b);
  return { phase, outcome: diff.first_differing_step === null ? "identical" : "differs", ...diff };
}

/** Replays a run folder and judges whether it reproduced. */
export async function rerunRun(path: string, options: RerunOptions): Promise<RerunResult> {
  const stored = await readStoredRun(path);
  // The rerun is a new run: the stored experiment resolved once, in this environment (its
  // `${env.NAME}` and code inputs), as `parity run` resolves a file; plan.json is written redacted.
  const resolved = resolvePlan(stored.experiment, {
    baseDir: stored.baseDir,
    harnessEnv: options.harnessEnv,
  });
  const storedPlan = await readStoredPlan(stored, options.harnessEnv);
  const { runDir, summary } = await runExperiment({
    plan: resolved,
    experiment: stored.experiment,
  }, {
    resultsDir: stored.resultsDir,
    baseDir: stored.baseDir,
    experimentFile: stored.manifest.experiment_file,
    only: [],
    keepGoing: true,
    force: true, // a rerun proves nothing if it reads the cache
    wait: options.wait,
    progress: options.progress,
    harnessEnv: options.harnessEnv,
    goldensDir: options.goldensDir,
  });
  const manifest: Manifest = JSON.parse(await Deno.readTextFile(join(runDir, "manifest.json")));
  const plan = placePlan(resolved, runDir);
  const phases: PhaseReproduction[] = [];
  for (const spec of plan.phases) {
    if (!spec.metrics) continue;
    phases.push(
      await comparePhase(spec, { ...stored, phases: storedPlan.phases }, { runDir, summary }),
    );
  }
  const environment = diffManifests(
    { manifest: stored.manifest, runDir: stored.runDir },
    { manifest, runDir },
  );
  const result: RerunResult = {
    ...judgeRerun({ interrupted: summary.interrupted, outcomes: phases.map((p) => p.outcome) }),
    source_run: stored.runDir,
    rerun_run: runDir,
    run_verdicts: { stored: stored.summary?.verdict ?? null, rerun: summary.verdict },
    phases,
    environment,
  };
  await writeJsonAtomic(join(runDir, "rerun.json"), result);
  return result;
}

function shown(path: string): string {
  const rel = relative(Deno.cwd(), path);
  return rel.startsWith("..") ? path : rel;
}

/** The rerun verdict card printed by the CLI. */
export function formatRerun(result: RerunResult): string {
  const lines = [
    `rerun of ${shown(result.source_run)}: ${result.verdict}`,
    `  new run: ${shown(result.rerun_run)} (rerun.json); run verdict ${
      result.run_verdicts.stored ?? "none"
    } → ${result.run_verdicts.rerun}`,
  ];
  const width = Math.max(0, ...result.phases.map((p) => p.phase.length));
  for (const p of result.phases) {
    const name = p.phase.padEnd(width);
    if (p.outcome === "identical") lines.push(`  ${name}  identical (${p.steps} steps)`);
    else if (p.outcome === "differs") {
      lines.push(
        `  ${name}  first differing step ${p.first_differing_step}: ${p.metric} ${p.stored} ` +
          `(stored) vs ${p.rerun} (rerun)`,
      );
    } else lines.push(`  ${name}  ${p.outcome}: ${p.note}`);
  }
  if (result.environment.length === 0) lines.push("  environment: no difference recorded");
  else {
    lines.push(`  environment differences (${result.environment.length}):`);
    for (const d of result.environment) lines.push(`    ${d.field}: ${d.stored} → ${d.rerun}`);
  }
  return lines.join("\n");
}

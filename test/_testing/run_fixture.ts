/**
 * Hand-made run folders for the report tests and the chart benchmark: a `summary.json`,
 * `losses.csv`, `experiment.resolved.yaml` and `phases/<p>/…` laid out exactly as the results
 * contract says, with numbers computed from the generated series (not typed in).
 *
 * @module
 */

import { ulpDistance64 } from "../../src/parity/lanes/ulp.ts";
import type {
  ComparisonSummary,
  PhaseSummary,
  RunSummary,
  Verdict,
} from "../../src/types/summary.ts";

/** Options of {@link makeFixtureRun}. */
export interface FixtureOptions {
  /** PASS: every lane passes, no failed phase. FAIL: resume-universal diverges at `save_at + 1` and resume-plan crashes. */
  verdict: "PASS" | "FAIL";
  /** Schedule length (default 40). */
  steps?: number;
  /** Split step (default half the schedule). */
  saveAt?: number;
  /** Baseline repeats (default 2); the last repeat wobbles by about 1e-7 when `noisyRepeats`. */
  repeats?: number;
  /** Make repeats differ slightly so the noise band has width. */
  noisyRepeats?: boolean;
  /** Experiment name (default `quickstart`). */
  experiment?: string;
  /** Run id (default `20261129T101500Z-ab12cd`). */
  runId?: string;
  /** ISO finish time (default 2026-11-29T10:15:41Z). */
  finishedAt?: string;
}

/** What {@link makeFixtureRun} produced. */
export interface FixtureRun {
  /** The run folder. */
  runDir: string;
  /** The summary written. */
  summary: RunSummary;
  /** Loss per phase per step (the values written to losses.csv). */
  losses: Record<string, Map<number, number>>;
}

function baselineLoss(step: number): number {
  return Math.fround(3 * Math.exp(-step / 30) + 0.05 * Math.sin(step) + 0.5);
}

function gradNorm(step: number): number {
  return Math.fround(1 / Math.sqrt(step) + 0.01 * Math.cos(step));
}

function compare(
  name: string,
  a: string,
  b: string,
  lane: "exact" | "tolerance",
  sa: Map<number, number>,
  sb: Map<number, number>,
  first: number,
  last: number,
  metric = "loss",
  rtol = 1e-3,
): ComparisonSummary {
  let maxAbs = 0, sumAbs = 0, maxRel = 0, maxUlp = 0, compared = 0;
  let firstDiv: number | null = null;
  let failures = 0;
  for (let s = first; s <= last; s++) {
    const va = sa.get(s);
    const vb = sb.get(s);
    if (va === undefined || vb === undefined) continue;
    compared++;
    const abs = Math.abs(vb - va);
    maxAbs = Math.max(maxAbs, abs);
    sumAbs += abs;
    maxRel = Math.max(maxRel, abs / Math.abs(va));
    maxUlp = Math.max(maxUlp, ulpDistance64(va, vb));
    const bad = lane === "exact" ? va !== vb : abs > rtol * Math.abs(va);
    if (bad) {
      failures++;
      if (firstDiv === null) firstDiv = s;
    }
  }
  const verdict: Verdict = firstDiv === null ? "PASS" : "FAIL";
  return {
    name,
    a,
    b,
    metric,
    lane,
    verdict,
    first_step: first,
    last_step: last,
    compared,
    first_divergent_step: firstDiv,
    last_matching_step: firstDiv === null ? last : firstDiv - 1,
    max_abs: maxAbs,
    mean_abs: compared ? sumAbs / compared : null,
    max_rel: maxRel,
    max_ulp: maxUlp,
    divergence: firstDiv === null
      ? null
      : { step: firstDiv, a: sa.get(firstDiv) ?? null, b: sb.get(firstDiv) ?? null },
    failures,
    ...(lane === "tolerance" ? { rtol, atol: 0, max_failures: 0 } : {}),
    reason: firstDiv === null
      ? `${compared} steps ${lane === "exact" ? "bit-identical" : "within tolerance"}`
      : `${b} differs from ${a} from step ${firstDiv}`,
  };
}

/**
 * Writes a complete run folder under `parent` and returns its path and the summary.
 */
export async function makeFixtureRun(parent: string, options: FixtureOptions): Promise<FixtureRun> {
  const steps = options.steps ?? 40;
  const saveAt = options.saveAt ?? Math.floor(steps / 2);
  const repeats = options.repeats ?? 2;
  const experiment = options.experiment ?? "quickstart";
  const runId = options.runId ?? "20261129T101500Z-ab12cd";
  const fail = options.verdict === "FAIL";
  const runDir = `${parent}/${experiment}/${runId}`;

  const range = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const series = (from: number, to: number, f: (s: number) => number) =>
    new Map(range(from, to).map((s) => [s, f(s)]));
  const losses: Record<string, Map<number, number>> = {
    baseline: series(1, steps, baselineLoss),
  };
  for (let k = 1; k <= repeats; k++) {
    const wobble = options.noisyRepeats && k === repeats;
    losses[`baseline-repeat-${k}`] = series(
      1,
      steps,
      (s) => wobble ? baselineLoss(s) * (1 + 1e-7 * Math.sin(3 * s)) : baselineLoss(s),
    );
  }
  losses["split"] = series(1, saveAt, baselineLoss);
  losses["resume-native"] = series(saveAt + 1, steps, baselineLoss);
  losses["resume-universal"] = series(
    saveAt + 1,
    steps,
    (s) => fail ? Math.fround(baselineLoss(s) + 0.004 * (s - saveAt) + 0.002) : baselineLoss(s),
  );
  if (fail) losses["resume-plan"] = new Map(); // crashed before its first step
  else losses["resume-plan"] = series(saveAt + 1, steps, baselineLoss);
  const grad = {
    baseline: series(1, steps, gradNorm),
    "resume-native": series(saveAt + 1, steps, gradNorm),
  };

  const phaseNames = Object.keys(losses);
  const phases: PhaseSummary[] = [
    { name: "baseline", role: "baseline", status: "ok", cached: false, wall_s: 9.8, exit_code: 0 },
    ...range(1, repeats).map((k): PhaseSummary => ({
      name: `baseline-repeat-${k}`,
      role: "repeat",
      status: "ok",
      cached: false,
      wall_s: 9.6,
      exit_code: 0,
    })),
    { name: "split", role: "split", status: "ok", cached: true, wall_s: 0, exit_code: 0 },
    { name: "convert", role: "convert", status: "ok", cached: false, wall_s: 1.2, exit_code: 0 },
    {
      name: "resume-native",
      role: "resume",
      status: "ok",
      cached: false,
      wall_s: 5.1,
      exit_code: 0,
    },
    {
      name: "resume-universal",
      role: "resume",
      status: "ok",
      cached: false,
      wall_s: 5.3,
      exit_code: 0,
    },
    fail
      ? {
        name: "resume-plan",
        role: "resume",
        status: "failed",
        cached: false,
        wall_s: 0.7,
        exit_code: 1,
        message: "exited with code 1",
        log_tail:
          "loading plan <plan.json> & shards\nTraceback: KeyError: 'layers.0.experts.w1'\n" +
          "\x1b[31mfatal\x1b[0m: missing segment",
      }
      : {
        name: "resume-plan",
        role: "resume",
        status: "ok",
        cached: false,
        wall_s: 5.0,
        exit_code: 0,
      },
  ];

  const comparisons: ComparisonSummary[] = [
    compare(
      "baseline~resume-native",
      "baseline",
      "resume-native",
      "exact",
      losses.baseline,
      losses["resume-native"],
      saveAt + 1,
      steps,
    ),
    compare(
      "baseline~resume-universal",
      "baseline",
      "resume-universal",
      "exact",
      losses.baseline,
      losses["resume-universal"],
      saveAt + 1,
      steps,
    ),
    compare(
      "baseline~resume-native:grad_norm",
      "baseline",
      "resume-native",
      "tolerance",
      grad.baseline,
      grad["resume-native"],
      saveAt + 1,
      steps,
      "grad_norm",
    ),
  ];
  if (fail) {
    comparisons.push({
      name: "baseline~resume-plan",
      a: "baseline",
      b: "resume-plan",
      metric: "loss",
      lane: "exact",
      verdict: "ERROR",
      first_step: saveAt + 1,
      last_step: steps,
      compared: 0,
      first_divergent_step: null,
      last_matching_step: null,
      max_abs: null,
      mean_abs: null,
      max_rel: null,
      max_ulp: null,
      reason: "phase resume-plan failed: no metrics",
    });
  } else {
    comparisons.push(
      compare(
        "baseline~resume-plan",
        "baseline",
        "resume-plan",
        "exact",
        losses.baseline,
        losses["resume-plan"],
        saveAt + 1,
        steps,
      ),
    );
  }

  const verdict: Verdict = fail ? "FAIL" : "PASS";
  const summary: RunSummary = {
    schema_version: 1,
    harness_version: "0.1.0",
    experiment,
    run_id: runId,
    started_at: "2026-11-29T10:15:00Z",
    finished_at: options.finishedAt ?? "2026-11-29T10:15:41Z",
    verdict,
    exit_code: fail ? 1 : 0,
    wall_s: 41.2,
    children_wall_s: 40.6,
    interrupted: false,
    steps,
    save_at: saveAt,
    phases,
    comparisons,
    state_checks: [
      {
        phase: "resume-native",
        verdict: "PASS",
        available: true,
        differing: [],
        compared: ["params", "rng"],
      },
      fail
        ? {
          phase: "resume-universal",
          verdict: "FAIL",
          available: true,
          differing: ["rng", "sampler"],
          compared: ["params", "rng", "sampler"],
        }
        : {
          phase: "resume-universal",
          verdict: "PASS",
          available: true,
          differing: [],
          compared: ["params", "rng", "sampler"],
        },
      { phase: "resume-plan", verdict: "N/A", available: false, differing: [] },
    ],
    plan_sync: [
      {
        policy: "first_holder",
        phase: "plan-first_holder",
        verified: true,
        segments: 96,
        moved_bytes: 49152,
        local_bytes: 16384,
        max_process_bytes: 32768,
        mean_process_bytes: 12288,
        per_process: {
          "0": { send: 32768, recv: 0 },
          "1": { send: 16384, recv: 16384 },
          "2": { send: 0, recv: 16384 },
          "3": { send: 0, recv: 16384 },
        },
      },
      {
        policy: "local_first_least_loaded",
        phase: "plan-local_first_least_loaded",
        verified: true,
        segments: 112,
        moved_bytes: 32768,
        local_bytes: 32768,
        max_process_bytes: 8192,
        mean_process_bytes: 8192,
        per_process: {
          "0": { send: 8192, recv: 8192 },
          "1": { send: 8192, recv: 8192 },
          "2": { send: 8192, recv: 8192 },
          "3": { send: 8192, recv: 8192 },
        },
      },
    ],
    noise_floor: options.noisyRepeats
      ? {
        repeats,
        identical: false,
        max_rel_deviation: 1e-7,
        derived_rtol: 1e-6,
        derivation: { multiplier: 10, floor: 2 ** -20, source: "default" as const },
      }
      : { repeats, identical: true },
    diagnostics: [
      {
        level: "warning",
        code: "metrics-rounded",
        message: "lr has at most 4 decimals | check the trainer",
        phase: "baseline",
      },
    ],
    git_commit: "a7997f1",
  };

  await Deno.mkdir(runDir, { recursive: true });
  await Deno.writeTextFile(`${runDir}/summary.json`, JSON.stringify(summary, null, 2) + "\n");
  await Deno.writeTextFile(
    `${runDir}/experiment.resolved.yaml`,
    `name: ${experiment}\nschedule:\n  steps: ${steps}\n  save_at: ${saveAt}\ncharts:\n  log_scale: false\n  max_points: 2000\n`,
  );
  const lines = [["step", ...phaseNames].join(",")];
  for (let s = 1; s <= steps; s++) {
    lines.push([
      s,
      ...phaseNames.map((p) => {
        const v = losses[p].get(s);
        return v === undefined ? "" : String(v);
      }),
    ].join(","));
  }
  await Deno.writeTextFile(`${runDir}/losses.csv`, lines.join("\n") + "\n");
  for (const phase of phases) {
    const dir = `${runDir}/phases/${phase.name}`;
    await Deno.mkdir(dir, { recursive: true });
    const metrics: string[] = [];
    for (const [s, loss] of losses[phase.name] ?? []) {
      const record: Record<string, number> = { step: s, loss };
      const g = (grad as Record<string, Map<number, number>>)[phase.name]?.get(s);
      if (g !== undefined) record.grad_norm = g;
      metrics.push(JSON.stringify(record));
    }
    if (phase.name === "split") {
      metrics.push(JSON.stringify({ event: "saved", step: saveAt, digests: { params: "ab" } }));
    }
    await Deno.writeTextFile(`${dir}/metrics.jsonl`, metrics.map((l) => l + "\n").join(""));
    await Deno.writeTextFile(`${dir}/stdout.log`, `phase ${phase.name} started\n`);
    await Deno.writeTextFile(
      `${dir}/stderr.log`,
      phase.status === "ok"
        ? ""
        : Array.from({ length: 60 }, (_, i) => `stderr line ${i + 1}`).join("\n") + "\n" +
          (phase.log_tail ?? "") + "\n",
    );
    await Deno.writeTextFile(`${dir}/phase.json`, JSON.stringify(phase, null, 2) + "\n");
  }
  return { runDir, summary, losses };
}

/**
 * Goldens per environment: a baseline's full-precision metrics stored under
 * `experiments/goldens/<experiment>/<environment-key>.jsonl`, and the judgement of a later
 * baseline against the golden of its environment (exact on the same facts, the noise floor or
 * declared tolerance on the same key with other facts, ABSTAIN when there is none).
 *
 * The file is itself a metrics JSONL: a `{"event": "golden", ...}` header record, then one step
 * record per step with every metric at round-trip precision, so any JSONL reader can load it.
 *
 * @module
 */

import { join, relative } from "node:path";
import { type MetricSeries, parseJsonl } from "../metrics/mod.ts";
import { compareLane, deriveNoiseRtol, unjudgedComparison } from "../parity/mod.ts";
import { TOLERANCE_DEFAULTS } from "../types/defaults.ts";
import type { ToleranceSpec } from "../types/phase_spec.ts";
import {
  type ComparisonSummary,
  type Diagnostic,
  type GoldenSummary,
  type NoiseFloorSummary,
  worstVerdict,
} from "../types/summary.ts";
import { type EnvironmentFacts, environmentKey } from "./environment.ts";
import { writeTextAtomic } from "../process/mod.ts";
import { experimentFolderName } from "./run_store.ts";

/** Name of the golden comparisons in `summary.json`. */
const GOLDEN_COMPARISON = "golden~baseline";

/** The header record of a golden file. */
export interface GoldenHeader {
  /** Always `golden`, so metrics readers treat the record as an event. */
  event: "golden";
  /** Format version. */
  golden_version: 1;
  /** Experiment name. */
  experiment: string;
  /** Environment key the file is filed under. */
  environment_key: string;
  /** Flat environment facts compared to tell "same environment" from "same key". */
  environment: Record<string, string>;
  /** Run folder the baseline came from. */
  source_run: string;
  /** ISO time of the save. */
  saved_at: string;
  /** Metrics stored. */
  metrics: string[];
  /** The source run's noise floor, when it measured one. */
  noise_floor: NoiseFloorSummary | null;
}

/** Path of the golden of `experiment` for `key`. */
export function goldenPath(goldensDir: string, experiment: string, key: string): string {
  return join(goldensDir, experimentFolderName(experiment), `${key}.jsonl`);
}

/** The facts a golden records and compares, flattened (`framework.torch`, `variable.X`). */
export function flatEnvironment(facts: EnvironmentFacts, os: string): Record<string, string> {
  const out: Record<string, string> = {
    hardware_class: facts.hardware_class,
    cpu_model: facts.cpu_model ?? "",
    os,
    trainer_code: facts.code.trainer?.digest ?? "",
  };
  for (const [k, v] of Object.entries(facts.frameworks)) out[`framework.${k}`] = v;
  for (const [k, v] of Object.entries(facts.variables)) out[`variable.${k}`] = v;
  return out;
}

/** The text of a golden file: header, then every step record of `series` in full precision. */
export function goldenText(header: GoldenHeader, series: MetricSeries): string {
  const lines = [JSON.stringify(header)];
  for (let i = 0; i < series.steps.length; i++) {
    const record: Record<string, number> = { step: series.steps[i] };
    for (const metric of header.metrics) {
      if (series.present[metric]?.[i]) record[metric] = series.values[metric][i];
    }
    lines.push(JSON.stringify(record));
  }
  return lines.join("\n") + "\n";
}

/** Writes a golden file (atomically), creating its folder. */
export async function writeGolden(path: string, text: string): Promise<void> {
  await Deno.mkdir(join(path, ".."), { recursive: true });
  await writeTextAtomic(path, text);
}

/** Reads a golden file; undefined when it does not exist. */
export async function readGolden(
  path: string,
): Promise<{ header: GoldenHeader; series: MetricSeries } | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  const series = parseJsonl(text);
  const header = series.events.find((e) => e.event === "golden")?.fields as unknown as
    | GoldenHeader
    | undefined;
  if (!header) throw new Error(`${path}: not a golden file (no {"event": "golden"} header)`);
  return { header, series };
}

/** What {@link judgeGolden} needs. */
export interface GoldenInput {
  /** Experiment name. */
  experiment: string;
  /** Goldens root. */
  goldensDir: string;
  /** This run's environment. */
  facts: EnvironmentFacts;
  /** Operating system string as the manifest records it (default this process's). */
  os?: string;
  /** The baseline's metrics; undefined when it did not complete. */
  baseline: MetricSeries | undefined;
  /** Metrics to compare. */
  metrics: string[];
  /** Schedule length: the window is every step 1..steps. */
  steps: number;
  /** Declared tolerance (used on the same key with other facts when no noise floor is stored). */
  tolerance?: ToleranceSpec;
}

/** The golden comparison of one run. */
export interface GoldenJudgement {
  /** For `summary.json` `golden`. */
  summary: GoldenSummary;
  /** `golden~baseline` comparisons, one per metric (or one ABSTAIN/ERROR placeholder). */
  comparisons: ComparisonSummary[];
  /** Findings (`golden-missing`, `golden-tolerance`). */
  diagnostics: Diagnostic[];
}

function placeholder(metric: string, verdict: "ABSTAIN" | "ERROR", reason: string) {
  return unjudgedComparison({
    name: GOLDEN_COMPARISON,
    a: "golden",
    b: "baseline",
    metric,
    lane: "exact",
    verdict,
    first_step: null,
    last_step: null,
    reason,
  });
}

/** Relative tolerance a golden's stored noise floor allows, if it measured any noise. */
function noiseRtol(noise: NoiseFloorSummary | null): number | undefined {
  if (!noise || noise.identical) return undefined;
  if (noise.derived_rtol && noise.derived_rtol > 0) return noise.derived_rtol;
  // An older golden stored no derived_rtol: derive it by the rule in force now.
  return noise.max_rel_deviation ? deriveNoiseRtol(noise, TOLERANCE_DEFAULTS)?.rtol : undefined;
}

/** Judges a run's baseline against the golden of its environment. */
export async function judgeGolden(input: GoldenInput): Promise<GoldenJudgement> {
  const key = await environmentKey(input.facts);
  const path = goldenPath(input.goldensDir, input.experiment, key);
  const shown = relative(Deno.cwd(), path).startsWith("..") ? path : relative(Deno.cwd(), path);
  const metric0 = input.metrics[0] ?? "loss";
  const golden = await readGolden(path);
  if (!golden) {
    const reason = `no golden for environment ${key} (${shown}); save one from a trusted run ` +
      `with: deno task parity golden save <run-dir>`;
    return {
      summary: { verdict: "ABSTAIN", environment_key: key, file: shown, found: false, reason },
      comparisons: [placeholder(metric0, "ABSTAIN", reason)],
      diagnostics: [{
        level: "warning",
        code: "golden-missing",
        phase: "baseline",
        message: reason,
      }],
    };
  }
  const base = {
    environment_key: key,
    file: shown,
    found: true,
    source_run: golden.header.source_run,
  };
  if (!input.baseline) {
    const reason = "the baseline did not complete, so it cannot be compared with the golden";
    return {
      summary: { ...base, verdict: "ERROR", reason },
      comparisons: [placeholder(metric0, "ERROR", reason)],
      diagnostics: [],
    };
  }
  const now = flatEnvironment(input.facts, input.os ?? `${Deno.build.os} ${Deno.build.arch}`);
  const differences = [...new Set([...Object.keys(now), ...Object.keys(golden.header.environment)])]
    .sort().filter((k) => (now[k] ?? "") !== (golden.header.environment[k] ?? ""))
    .map((k) => `${k}: ${golden.header.environment[k] ?? "(unset)"} → ${now[k] ?? "(unset)"}`);
  let lane: "exact" | "tolerance" = "exact";
  let rtol: number | undefined;
  let atol = 0;
  let maxFailures = 0;
  let reason = "same environment as the golden: bit-identical expected";
  if (differences.length > 0) {
    const fromNoise = noiseRtol(golden.header.noise_floor);
    const declared = input.tolerance;
    if (fromNoise !== undefined) {
      [lane, rtol, reason] = ["tolerance", fromNoise, "same key, other facts: golden noise floor"];
    } else if (declared) {
      lane = "tolerance";
      rtol = "auto" in declared ? declared.floor : declared.rtol;
      atol = declared.atol;
      maxFailures = declared.max_failures;
      reason = "same key, other facts: declared tolerance";
    } else {
      reason = "same key, other facts, but no noise floor or tolerance declared: exact";
    }
    reason += ` (${differences.join("; ")})`;
  }
  const metrics = input.metrics.filter((m) => golden.header.metrics.includes(m));
  if (metrics.length === 0) {
    const why = `the golden stores ${golden.header.metrics.join(", ")}, ` +
      `not the compared metrics (${input.metrics.join(", ")})`;
    return {
      summary: { ...base, verdict: "ABSTAIN", reason: why },
      comparisons: [placeholder(metric0, "ABSTAIN", why)],
      diagnostics: [],
    };
  }
  const comparisons = metrics.map((metric): ComparisonSummary => ({
    name: GOLDEN_COMPARISON,
    a: "golden",
    b: "baseline",
    metric,
    lane_reason: reason,
    ...compareLane(golden.series, input.baseline!, {
      lane,
      metric,
      window: { from: 1, to: input.steps },
      rtol,
      atol,
      maxFailures,
      names: ["golden", "baseline"],
    }),
  }));
  const verdict = worstVerdict(comparisons.map((c) => c.verdict));
  const summary: GoldenSummary = { ...base, verdict, lane, reason };
  if (differences.length > 0) summary.differences = differences;
  return { summary, comparisons, diagnostics: [] };
}

/**
 * `parity golden save <run-dir>`: files a run's baseline, every metric at full precision, as the
 * golden of its environment (`<goldens>/<experiment>/<environment-key>.jsonl`, the key derived
 * from the run's manifest), with the run's noise floor when it measured one.
 *
 * @module
 */

import { hasErrors, readMetrics } from "../metrics/mod.ts";
import { environmentKey } from "../pipeline/store/mod.ts";
import {
  flatEnvironment,
  type GoldenHeader,
  goldenPath,
  goldenText,
  writeGolden,
} from "../pipeline/running/mod.ts";
import { readStoredPlan, readStoredRun, StoredRunError } from "./stored_run.ts";

/** What was saved. */
export interface SavedGolden {
  /** The golden file. */
  file: string;
  /** Environment key. */
  key: string;
  /** Steps stored. */
  steps: number;
  /** Metrics stored. */
  metrics: string[];
  /** Whether a golden for this key was replaced. */
  replaced: boolean;
}

/** Saves the baseline of the run in `path` as its environment's golden under `goldensDir`. */
export async function saveGolden(
  path: string,
  options: { goldensDir: string; harnessEnv: Record<string, string> },
): Promise<SavedGolden> {
  const stored = await readStoredRun(path);
  const facts = stored.manifest.environment;
  if (!facts) {
    throw new StoredRunError(
      `${stored.runDir}: its manifest has no environment facts (an older harness); rerun it first`,
    );
  }
  const baseline = stored.summary?.phases.find((p) => p.role === "baseline");
  if (baseline?.status !== "ok") {
    throw new StoredRunError(`${stored.runDir}: the baseline did not complete; nothing to save`);
  }
  const plan = await readStoredPlan(stored, options.harnessEnv);
  const spec = plan.phases.find((p) => p.name === baseline.name)!;
  const series = await readMetrics(spec.metrics!.path, { ...spec.metrics });
  if (hasErrors(series) || series.steps.length === 0) {
    throw new StoredRunError(
      `${spec.metrics!.path}: the baseline's metrics cannot be read cleanly`,
    );
  }
  const key = await environmentKey(facts);
  const noise = stored.summary!.noise_floor;
  const header: GoldenHeader = {
    event: "golden",
    golden_version: 1,
    experiment: stored.experiment.name,
    environment_key: key,
    environment: flatEnvironment(facts, stored.manifest.os),
    source_run: stored.runDir,
    saved_at: new Date().toISOString(),
    metrics: Object.keys(series.values),
    noise_floor: noise && noise.repeats > 0 ? noise : null,
  };
  const file = goldenPath(options.goldensDir, stored.experiment.name, key);
  const replaced = await Deno.stat(file).then(() => true, () => false);
  await writeGolden(file, goldenText(header, series));
  return { file, key, steps: series.steps.length, metrics: header.metrics, replaced };
}

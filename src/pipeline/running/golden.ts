/**
 * Goldens per environment: a baseline's full-precision metrics stored under
 * `experiments/goldens/<experiment>/<environment-key>.jsonl`, and the facts a later run's golden
 * judgement needs (this run's environment key and facts, the golden filed under it). What they
 * prove is decided by parity's golden rules (`judgeAgainstGolden`).
 *
 * The file is itself a metrics JSONL: a `{"event": "golden", ...}` header record, then one step
 * record per step with every metric at round-trip precision, so any JSONL reader can load it.
 *
 * @module
 */

import { join, relative } from "node:path";
import { type MetricSeries, parseJsonl } from "../../metrics/mod.ts";
import {
  type GoldenBaseline,
  type GoldenEvidence,
  type GoldenFacts,
  type GoldenHeader,
  judgeAgainstGolden,
} from "../../parity/mod.ts";
import { type EnvironmentFacts, environmentKey, experimentFolderName } from "../store/mod.ts";
import { writeTextAtomic } from "../../process/mod.ts";

export type { GoldenHeader };

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
export interface GoldenInput extends GoldenBaseline {
  /** Experiment name. */
  experiment: string;
  /** Goldens root. */
  goldensDir: string;
  /** This run's environment. */
  facts: EnvironmentFacts;
  /** Operating system string as the manifest records it (default this process's). */
  os?: string;
}

/** The golden comparison of one run (`summary`, `golden~baseline` comparisons, findings). */
export type GoldenJudgement = GoldenEvidence;

/** Reads the golden of this run's environment and the facts compared with it; decides nothing. */
export async function readGoldenFacts(
  input: Pick<GoldenInput, "experiment" | "goldensDir" | "facts" | "os">,
): Promise<GoldenFacts> {
  const key = await environmentKey(input.facts);
  const path = goldenPath(input.goldensDir, input.experiment, key);
  const shown = relative(Deno.cwd(), path).startsWith("..") ? path : relative(Deno.cwd(), path);
  const golden = await readGolden(path);
  return {
    environment_key: key,
    file: shown,
    ...(golden ? { golden } : {}),
    environment: flatEnvironment(input.facts, input.os ?? `${Deno.build.os} ${Deno.build.arch}`),
  };
}

/** Judges a run's baseline against the golden of its environment, by parity's golden rules. */
export async function judgeGolden(input: GoldenInput): Promise<GoldenJudgement> {
  return judgeAgainstGolden(await readGoldenFacts(input), input);
}

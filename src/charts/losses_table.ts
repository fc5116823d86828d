/**
 * Reads `losses.csv`, the run's per-step loss table (`step,<phase>...`, baseline first, an empty
 * cell where a phase has no step). The harness writes this file itself with full-precision
 * numbers, so a split loop into arrays is used rather than a general CSV parser.
 *
 * @module
 */

/** Column name prefix of repeated baselines (noise-floor runs). */
const REPEAT_PREFIX = "baseline-repeat-";

/** Per-step values of every phase of a run. */
export interface LossTable {
  /** Steps in file order (ascending). */
  steps: number[];
  /** Phase names in column order. */
  phases: string[];
  /** Values per phase; `null` where the phase has no value at that step. */
  columns: Record<string, (number | null)[]>;
}

/** A step-aligned series of one phase. */
export interface Series {
  /** Steps, ascending. */
  steps: number[];
  /** Values, one per step. */
  values: number[];
}

function parseCell(cell: string): number | null {
  const text = cell.trim();
  if (text === "") return null;
  // "NaN", "Infinity" and "-Infinity" are kept as such: a NaN loss is evidence, not a gap.
  return Number(text);
}

/**
 * Parses the text of a `losses.csv` file.
 *
 * @example
 * ```ts
 * import { parseLossesCsv } from "./losses_table.ts";
 * const table = parseLossesCsv("step,baseline,resume\n1,2.5,\n2,2.25,2.25\n");
 * table.columns.resume; // [null, 2.25]
 * ```
 *
 * @param text CSV text with a `step` first column.
 * @returns The table; throws on a malformed header or step.
 */
export function parseLossesCsv(text: string): LossTable {
  const lines = text.split(/\r?\n/).filter((line) => line.trim() !== "");
  if (lines.length === 0) throw new Error("losses.csv is empty");
  const header = lines[0].split(",").map((h) => h.trim());
  if (header[0] !== "step") throw new Error(`losses.csv must start with a "step" column`);
  const phases = header.slice(1);
  const columns: Record<string, (number | null)[]> = {};
  for (const phase of phases) columns[phase] = [];
  const steps: number[] = [];
  for (let row = 1; row < lines.length; row++) {
    const cells = lines[row].split(",");
    const step = Number(cells[0]);
    if (!Number.isInteger(step)) {
      throw new Error(`losses.csv line ${row + 1}: bad step "${cells[0]}"`);
    }
    steps.push(step);
    for (let c = 0; c < phases.length; c++) columns[phases[c]].push(parseCell(cells[c + 1] ?? ""));
  }
  return { steps, phases, columns };
}

/**
 * The steps where `phase` has a value, with those values (empty when the phase is absent).
 */
export function seriesOf(table: LossTable, phase: string): Series {
  const column = table.columns[phase];
  const steps: number[] = [];
  const values: number[] = [];
  if (!column) return { steps, values };
  for (let i = 0; i < table.steps.length; i++) {
    const v = column[i];
    if (v !== null) {
      steps.push(table.steps[i]);
      values.push(v);
    }
  }
  return { steps, values };
}

/** Names of the repeated-baseline columns (`baseline-repeat-<k>`), in column order. */
export function repeatPhases(table: LossTable): string[] {
  return table.phases.filter((p) => p.startsWith(REPEAT_PREFIX));
}

/**
 * Accumulates step records into a {@link MetricSeries}: columnar arrays while reading, then one
 * pass at the end that sorts (only when needed), merges duplicate steps and names every problem
 * with a stable code. Diagnostics are aggregated per code so a million bad lines make one
 * finding, not a million.
 *
 * @module
 */

import type { Diagnostic, LossAliasFinding } from "../types/mod.ts";
import { type EventRecord, type MetricSeries, READER_CODES } from "./series.ts";

/** A growable column: `values[i]`/`present[i]` for record `i`, valid below `length`. */
export interface Column {
  values: Float64Array;
  present: Uint8Array;
  length: number;
}

function newColumn(capacity: number): Column {
  return {
    values: new Float64Array(capacity),
    present: new Uint8Array(capacity),
    length: 0,
  };
}

function grow(column: Column, capacity: number): void {
  const values = new Float64Array(capacity);
  values.set(column.values.subarray(0, column.length));
  const present = new Uint8Array(capacity);
  present.set(column.present.subarray(0, column.length));
  column.values = values;
  column.present = present;
}

interface Aggregate {
  level: Diagnostic["level"];
  summary: string;
  count: number;
  step?: number;
  metric?: string;
  samples: string[];
}

const SAMPLE_LIMIT = 3;

/** Names `loss` may be found under in other tools' outputs (compared lower-cased). */
const LOSS_ALIASES = ["train_loss", "lm loss", "lm_loss", "training_loss", "train/loss"];

/** Builds one {@link MetricSeries}; see the module doc. */
export class SeriesBuilder {
  #steps: number[] = [];
  #columns = new Map<string, Column>();
  #ordered = true;
  #lastInSource = Number.NEGATIVE_INFINITY;
  #events: EventRecord[] = [];
  #aggregates = new Map<string, Aggregate>();
  #record = -1;
  #lossName: string | undefined;
  #lossFinding: LossAliasFinding | undefined;

  /** `lossName`: the metric that is the loss when it is not `loss` (`metrics.loss`). */
  constructor(lossName?: string) {
    this.#lossName = lossName === "loss" ? undefined : lossName;
  }

  /** Starts a new source file: backwards steps are judged within one source only. */
  startSource(): void {
    this.#lastInSource = Number.NEGATIVE_INFINITY;
  }

  /**
   * Opens a step record at 1-based `line` of the current source; `label` prefixes the line in
   * diagnostics (e.g. `line`, `loss.csv line`, `events.out record`).
   */
  beginRecord(step: number, line: number, label = "line"): void {
    if (step < this.#lastInSource) {
      this.note(
        READER_CODES.backwards,
        "error",
        "steps go backwards",
        `${label} ${line}: step ${step} after step ${this.#lastInSource}`,
        step,
      );
    }
    if (step > this.#lastInSource) this.#lastInSource = step;
    const n = this.#steps.length;
    if (n > 0 && step <= this.#steps[n - 1]) this.#ordered = false;
    this.#steps.push(step);
    this.#record++;
  }

  /** The column of `metric`, created on first use (hand it to {@link setIn} in hot loops). */
  column(metric: string): Column {
    let column = this.#columns.get(metric);
    if (column === undefined) {
      column = newColumn(Math.max(16, this.#steps.length * 2));
      this.#columns.set(metric, column);
    }
    return column;
  }

  /** Sets `metric` of the open record (`value` may be NaN or infinite as logged). */
  set(metric: string, value: number): void {
    this.setIn(this.column(metric), value);
  }

  /** Sets a column's value for the open record. */
  setIn(column: Column, value: number): void {
    const record = this.#record;
    if (column.length === record + 1) {
      // The same key twice in one record: the later one wins, as JSON.parse does.
      column.values[record] = value;
      return;
    }
    if (record >= column.values.length) grow(column, Math.max(16, (record + 1) * 2));
    // Records that skipped this metric stay absent (present 0, value NaN).
    if (column.length < record) column.values.fill(Number.NaN, column.length, record);
    column.values[record] = value;
    column.present[record] = 1;
    column.length = record + 1;
  }

  /** Records an event. */
  addEvent(event: EventRecord): void {
    this.#events.push(event);
  }

  /** Notes a step column counted in samples without the samples per optimizer step. */
  checkSamplesPerStep(unit: "step" | "samples", perStep: number | undefined): void {
    if (unit !== "samples" || perStep) return;
    this.note(
      READER_CODES.samplesPerStepMissing,
      "error",
      "steps are counted in samples but samples_per_step is not set",
      "set metrics.samples_per_step (the global batch size) to convert samples to optimizer steps",
    );
  }

  /**
   * The optimizer step of a step column that counts samples (`perStep` samples per step), or
   * undefined after noting a count that is not a whole number of steps. Without `perStep` the
   * column already counts steps.
   */
  stepOf(raw: number, perStep: number | undefined, where: string): number | undefined {
    if (!perStep) return raw;
    const step = raw / perStep;
    if (Number.isInteger(step)) return step;
    this.note(
      READER_CODES.samplesNotAligned,
      "error",
      "sample counts that are not a whole number of optimizer steps",
      `${where}: ${raw} samples / ${perStep}`,
    );
    return undefined;
  }

  /** Adds one occurrence of a finding; occurrences of a code are merged into one diagnostic. */
  note(
    code: string,
    level: Diagnostic["level"],
    summary: string,
    detail: string,
    step?: number,
    metric?: string,
  ): void {
    let agg = this.#aggregates.get(code);
    if (agg === undefined) {
      agg = { level, summary, count: 0, step, metric, samples: [] };
      this.#aggregates.set(code, agg);
    }
    agg.count++;
    if (agg.samples.length < SAMPLE_LIMIT) agg.samples.push(detail);
  }

  /** Number of step records so far. */
  get records(): number {
    return this.#steps.length;
  }

  /** Finishes: sorts, merges duplicates, aliases `loss`, checks it is everywhere. */
  finish(): MetricSeries {
    const count = this.#steps.length;
    for (const [name, column] of this.#columns) {
      // Columns the fast path created for a line it then declined carry nothing.
      if (column.length === 0) {
        this.#columns.delete(name);
        continue;
      }
      if (column.values.length < count) grow(column, count);
      column.values.fill(Number.NaN, column.length, count);
      column.present.fill(0, column.length, count);
      column.length = count;
    }
    const series = this.#ordered ? this.#packOrdered() : this.#packMerged();
    this.#aliasLoss(series);
    this.#checkLoss(series);
    if (count === 0) {
      this.note(READER_CODES.empty, "error", "no step records", "the source holds no step record");
    }
    series.events = this.#events;
    series.diagnostics = this.#diagnostics();
    return series;
  }

  #packOrdered(): MetricSeries {
    const values: Record<string, Float64Array> = {};
    const present: Record<string, Uint8Array> = {};
    const count = this.#steps.length;
    for (const [name, column] of this.#columns) {
      values[name] = column.values.length === count ? column.values : column.values.slice(0, count);
      present[name] = column.present.length === count
        ? column.present
        : column.present.slice(0, count);
    }
    return { steps: Float64Array.from(this.#steps), values, present, events: [], diagnostics: [] };
  }

  #packMerged(): MetricSeries {
    const raw = this.#steps;
    const order = Array.from(raw.keys()).sort((i, j) => raw[i] - raw[j] || i - j);
    const steps: number[] = [];
    const groups: number[][] = [];
    for (const i of order) {
      if (steps.length > 0 && steps[steps.length - 1] === raw[i]) groups[groups.length - 1].push(i);
      else {
        steps.push(raw[i]);
        groups.push([i]);
      }
    }
    const values: Record<string, Float64Array> = {};
    const present: Record<string, Uint8Array> = {};
    for (const [name, column] of this.#columns) {
      const v = new Float64Array(steps.length).fill(Number.NaN);
      const p = new Uint8Array(steps.length);
      for (let g = 0; g < groups.length; g++) {
        for (const i of groups[g]) {
          if (column.present[i] === 0) continue;
          const x = column.values[i];
          if (p[g] === 1) this.#duplicate(steps[g], name, v[g], x);
          v[g] = x; // the later record wins
          p[g] = 1;
        }
      }
      values[name] = v;
      present[name] = p;
    }
    return {
      steps: Float64Array.from(steps),
      values,
      present,
      events: [],
      diagnostics: [],
    };
  }

  #duplicate(step: number, metric: string, earlier: number, later: number): void {
    const same = Object.is(earlier, later) || (earlier === later);
    if (same) {
      this.note(
        READER_CODES.duplicateSame,
        "info",
        "steps logged more than once with identical values",
        `step ${step} ${metric}=${earlier}`,
        step,
        metric,
      );
    } else {
      this.note(
        READER_CODES.duplicateConflict,
        "error",
        "steps logged more than once with different values (the later one is kept)",
        `step ${step} ${metric}: ${earlier} then ${later}`,
        step,
        metric,
      );
    }
  }

  /**
   * Decides which metric is `loss`: the declared one (`metrics.loss`), else `loss` itself, else
   * the one metric the alias rule matches. Several matches take none (a structured finding says
   * which and why), and so does a declared name the source lacks (`#checkLoss` reports it).
   */
  #aliasLoss(series: MetricSeries): void {
    const declared = this.#lossName;
    if (declared !== undefined) {
      // The declared metric replaces any `loss` column the source also has.
      delete series.values.loss;
      delete series.present.loss;
      if (series.values[declared] === undefined) return;
      this.#takeLoss(series, { rule: "declared", candidates: [declared], chosen: declared });
      return;
    }
    if (series.values.loss !== undefined) return;
    const candidates = Object.keys(series.values).filter((name) => {
      const lower = name.toLowerCase();
      const last = lower.split("/").pop() ?? lower;
      return LOSS_ALIASES.includes(lower) || LOSS_ALIASES.includes(last) || last === "loss";
    }).sort();
    if (candidates.length === 1) {
      this.#takeLoss(series, { rule: "alias", candidates, chosen: candidates[0] });
    } else if (candidates.length > 1) {
      this.#lossFinding = { rule: "ambiguous", candidates };
      this.note(
        READER_CODES.lossAmbiguous,
        "error",
        "no loss, and several metrics could be it, so none is taken",
        `${candidates.map((c) => `"${c}"`).join(", ")} all match the loss alias rule; ` +
          `name one with metrics.loss (e.g. loss: ${candidates[0]})`,
        undefined,
        "loss",
      );
    }
  }

  #takeLoss(series: MetricSeries, finding: LossAliasFinding): void {
    const source = finding.chosen!;
    series.values.loss = series.values[source];
    series.present.loss = series.present[source];
    this.#lossFinding = finding;
    this.note(
      READER_CODES.lossAlias,
      "info",
      "loss taken from another metric",
      finding.rule === "declared"
        ? `loss is read from "${source}" (metrics.loss)`
        : `loss is read from "${source}"`,
      undefined,
      "loss",
    );
  }

  #checkLoss(series: MetricSeries): void {
    if (series.steps.length === 0) return;
    const present = series.present.loss;
    if (present === undefined) {
      this.note(
        READER_CODES.missingLoss,
        "error",
        "step records without loss",
        `no record carries "${this.#lossName ?? "loss"}"${
          this.#lossName ? " (metrics.loss)" : ""
        } (metrics: ${Object.keys(series.values).join(", ") || "none"})`,
        series.steps[0],
        "loss",
      );
      return;
    }
    for (let i = 0; i < present.length; i++) {
      if (present[i] === 0) {
        this.note(
          READER_CODES.missingLoss,
          "error",
          "step records without loss",
          `step ${series.steps[i]}`,
          series.steps[i],
          "loss",
        );
      }
    }
  }

  #diagnostics(): Diagnostic[] {
    const out: Diagnostic[] = [];
    for (const [code, agg] of this.#aggregates) {
      const more = agg.count > agg.samples.length
        ? ` (and ${agg.count - agg.samples.length} more)`
        : "";
      const diagnostic: Diagnostic = {
        level: agg.level,
        code,
        message: `${agg.summary}: ${agg.samples.join("; ")}${more}`,
        count: agg.count,
      };
      if (agg.step !== undefined) diagnostic.step = agg.step;
      if (agg.metric !== undefined) diagnostic.metric = agg.metric;
      if (
        this.#lossFinding &&
        (code === READER_CODES.lossAlias || code === READER_CODES.lossAmbiguous)
      ) {
        diagnostic.loss_alias = this.#lossFinding;
      }
      out.push(diagnostic);
    }
    return out;
  }
}

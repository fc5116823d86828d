/**
 * Reader of DeepSpeed `csv_monitor` output (research/deepspeed.md §3.2): one `<name>.csv` per
 * event name with a `step,<name>` header, rows `step,value`. A resumed writer opens the file in
 * append mode and writes the header again mid-file, so header rows anywhere are skipped (and
 * noted). The step column is `global_samples` for engine events, so with `step_unit: samples` it
 * is divided by `samples_per_step`. A path may be a folder of such files or one file (which may
 * carry several value columns, e.g. `step,loss,lr`). In a folder, `deepspeed_config.csv` (the run's
 * configuration, not a metric) is ignored.
 *
 * @module
 */

import { SeriesBuilder } from "./_builder.ts";
import { parseSources, readSources } from "./_sources.ts";
import { type MetricSeries, READER_CODES, type ReadOptions } from "./series.ts";

const NON_FINITE = /^\s*([+-]?)(nan|inf|infinity)\s*$/i;

/**
 * The run configuration a csv_monitor may write next to its metric files (`key,value` rows; newer
 * DeepSpeed versions, `csvMonitor.update_config`). Not a metric: skipped when reading a folder.
 */
const CONFIG_CSV = "deepspeed_config.csv";

/** One CSV file's text with the name it is known by (for diagnostics). */
export interface CsvSource {
  /** File name shown in diagnostics. */
  name: string;
  /** File content. */
  text: string;
}

/** Parses csv_monitor texts (one per file) into one series. */
export function parseDeepspeedCsv(sources: CsvSource[], options: ReadOptions = {}): MetricSeries {
  // csv_monitor writes engine.global_samples in the step column unless the caller logged steps.
  return parseSources(sources, options, "samples", readOne);
}

/** Reads a csv_monitor folder (every `*.csv` in it, sorted by name) or a single CSV file. */
export function readDeepspeedCsv(
  path: string,
  options: ReadOptions = {},
): Promise<MetricSeries> {
  return readSources(
    path,
    (name) => name.endsWith(".csv") && name !== CONFIG_CSV,
    async (name, file): Promise<CsvSource> => ({ name, text: await Deno.readTextFile(file) }),
    (sources) => parseDeepspeedCsv(sources, options),
  );
}

function readOne(builder: SeriesBuilder, source: CsvSource, perStep: number | undefined): void {
  const lines = source.text.split("\n");
  let header: string[] | null = null;
  let headerLine = "";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].endsWith("\r") ? lines[i].slice(0, -1) : lines[i];
    if (line.trim() === "") continue;
    const cells = line.split(",").map((cell) => cell.trim());
    const where = `${source.name} line ${i + 1}`;
    if (cells[0].toLowerCase() === "step") {
      if (header === null) {
        header = cells.slice(1).map(metricName);
        headerLine = line;
      } else {
        builder.note(
          READER_CODES.repeatedHeader,
          "info",
          "header rows repeated mid-file (a resumed writer appended)",
          line === headerLine ? where : `${where} (a different header; the first one is kept)`,
        );
      }
      continue;
    }
    if (header === null) {
      // DeepSpeed always writes a header; a file without one still gets a usable name.
      header = [metricName(source.name.replace(/\.csv$/, ""))];
    }
    const isLast = i === lines.length - 1;
    const raw = Number(cells[0]);
    if (cells[0] === "" || !Number.isFinite(raw) || cells.length < 2) {
      builder.note(
        isLast ? READER_CODES.truncated : READER_CODES.unparseable,
        "error",
        isLast ? "the last line is cut off or unparseable" : "rows that are not step,value",
        `${where}: ${line.slice(0, 60)}`,
      );
      continue;
    }
    const step = builder.stepOf(raw, perStep, where);
    if (step === undefined) continue;
    if (!Number.isInteger(step) || step < 0) {
      builder.note(
        READER_CODES.invalidStep,
        "error",
        "records without a non-negative integer step",
        `${where}: step ${cells[0]}`,
      );
      continue;
    }
    builder.beginRecord(step, i + 1, `${source.name} line`);
    for (let c = 1; c < cells.length && c <= header.length; c++) {
      const name = header[c - 1];
      const cell = cells[c];
      const match = NON_FINITE.exec(cell);
      let value = Number(cell);
      if (match !== null) {
        value = match[2].toLowerCase() === "nan"
          ? Number.NaN
          : match[1] === "-"
          ? Number.NEGATIVE_INFINITY
          : Number.POSITIVE_INFINITY;
      }
      if (cell === "" || (match === null && !Number.isFinite(value))) {
        builder.note(
          READER_CODES.nonNumeric,
          "error",
          "values that are not numbers",
          `${where}: ${name}=${JSON.stringify(cell)}`,
          step,
          name,
        );
        builder.set(name, Number.NaN);
        continue;
      }
      if (!Number.isFinite(value)) {
        builder.note(
          READER_CODES.nonFinite,
          "error",
          "NaN or infinite metric values",
          `${where} step ${step}: ${name}=${cell}`,
          step,
          name,
        );
      }
      builder.set(name, value);
    }
  }
}

/** csv_monitor names a column by the last component of the event name. */
function metricName(header: string): string {
  const parts = header.split("/");
  return parts[parts.length - 1];
}

/**
 * Reader of metrics printed in a text log: a regex with named groups `step` and `loss`; every
 * other named group becomes a metric too. Each line is matched once. Printed values are usually
 * rounded (`Loss: {loss:.4f}`); the parity engine flags that (`metrics-rounded`), the reader
 * does not guess.
 *
 * @module
 */

import { SeriesBuilder } from "./_builder.ts";
import { readSources } from "./_sources.ts";
import { emptySeries, type MetricSeries, READER_CODES } from "./series.ts";

/**
 * Pattern used when none is given: `step` then `loss`, separated by anything, with `=`, `:` or
 * a space after each word, e.g. `Step 12, Loss: 2.3456` or `steps: 12 loss: 2.3456`.
 */
export const DEFAULT_LOG_PATTERN = String
  .raw`(?<![A-Za-z])[Ss]teps?\b\s*[=:]?\s*(?<step>\d+)\b.*?(?<![A-Za-z_])[Ll]oss\b\s*[=:]?\s*(?<loss>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|Inf|-inf|-Inf))`;

const NON_FINITE = /^\s*([+-]?)(nan|inf|infinity)\s*$/i;

/** Parses log text with `pattern` (default {@link DEFAULT_LOG_PATTERN}). */
export function parseLog(text: string, pattern: string = DEFAULT_LOG_PATTERN): MetricSeries {
  let regex: RegExp;
  try {
    regex = new RegExp(pattern);
  } catch (error) {
    return badPattern(`the pattern is not a valid regex: ${(error as Error).message}`);
  }
  if (!/\(\?<step>/.test(pattern)) return badPattern("the pattern has no (?<step>...) group");
  const builder = new SeriesBuilder();
  builder.startSource();
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const match = regex.exec(lines[i]);
    if (match === null || match.groups === undefined) continue;
    const where = `line ${i + 1}`;
    const step = Number(match.groups.step);
    if (!Number.isInteger(step) || step < 0) {
      builder.note(
        READER_CODES.invalidStep,
        "error",
        "records without a non-negative integer step",
        `${where}: step ${JSON.stringify(match.groups.step)}`,
      );
      continue;
    }
    builder.beginRecord(step, i + 1);
    for (const [name, raw] of Object.entries(match.groups)) {
      if (name === "step" || raw === undefined) continue;
      const nonFinite = NON_FINITE.exec(raw);
      const value = nonFinite === null
        ? Number(raw)
        : nonFinite[2].toLowerCase() === "nan"
        ? Number.NaN
        : nonFinite[1] === "-"
        ? Number.NEGATIVE_INFINITY
        : Number.POSITIVE_INFINITY;
      if (nonFinite === null && (raw.trim() === "" || !Number.isFinite(value))) {
        builder.note(
          READER_CODES.nonNumeric,
          "error",
          "values that are not numbers",
          `${where}: ${name}=${JSON.stringify(raw)}`,
          step,
          name,
        );
        builder.set(name, Number.NaN);
        continue;
      }
      if (nonFinite !== null) {
        builder.note(
          READER_CODES.nonFinite,
          "error",
          "NaN or infinite metric values",
          `${where} step ${step}: ${name}=${raw}`,
          step,
          name,
        );
      }
      builder.set(name, value);
    }
  }
  return builder.finish();
}

/** Reads a log file with `pattern`. */
export function readLog(path: string, pattern?: string): Promise<MetricSeries> {
  return readSources(
    path,
    null,
    (_name, file) => Deno.readTextFile(file),
    ([text]) => parseLog(text, pattern),
  );
}

function badPattern(message: string): MetricSeries {
  return emptySeries([{ level: "error", code: READER_CODES.badPattern, message }]);
}

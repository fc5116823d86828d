/**
 * The metrics readers fuzzed (docs/reliability.md, "Readers"): the JSONL, DeepSpeed csv_monitor,
 * log-regex and TensorBoard readers each get 10,000 inputs mutated from real evidence —
 * truncated, bit-flipped, huge or non-finite numbers, wrong types, lines duplicated, dropped or
 * swapped, stray bytes, broken record framing and CRCs. For every input: the reader never throws;
 * every diagnostic carries a known code and a message; judged in the exact lane against the
 * unmutated evidence over its steps, PASS only when every judged value is still bit for bit the
 * original and the reader found no error; anything else names why. `PARITY_FUZZ_CASES` changes
 * the count (the seed is fixed, so a failure replays).
 */

import assert from "node:assert/strict";
import { parseDeepspeedCsv } from "../src/metrics/deepspeed_csv.ts";
import { parseJsonl } from "../src/metrics/jsonl.ts";
import { parseLog } from "../src/metrics/log.ts";
import { type MetricSeries, READER_CODES, type ReadOptions } from "../src/metrics/series.ts";
import { parseTensorboard } from "../src/metrics/tensorboard.ts";
import { judgeSeries } from "../src/parity/evaluate.ts";
import { unionWindow } from "../src/parity/lanes/lanes.ts";
import type { Diagnostic } from "../src/types/summary.ts";
import { seededRandom } from "./_testing/seeded_random.ts";

const CASES = Number(Deno.env.get("PARITY_FUZZ_CASES") ?? 10_000);
const TESTDATA = new URL("../src/metrics/testdata/", import.meta.url).pathname;
const KNOWN_CODES = new Set<string>(Object.values(READER_CODES));
const SAMPLES: ReadOptions = { step_unit: "samples", samples_per_step: 8 };

const HUGE = [
  "1e309",
  "-1e400",
  "9".repeat(400),
  "1.7976931348623157e308",
  "4.9e-325",
  "NaN",
  "Infinity",
  "-0",
  "0x10",
  "1_000",
];
const WRONG_TYPES = ['"x"', "true", "null", "[]", "{}", '""', '"1.5"', "[1]"];

/** One reader under fuzz: its real input split into files, and how to parse a mutated copy. */
interface Target {
  name: string;
  files: Uint8Array[];
  parse(files: Uint8Array[]): MetricSeries;
  /** Whether the format is text (token mutations apply). */
  text: boolean;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

async function targets(): Promise<Target[]> {
  const csvDir = `${TESTDATA}deepspeed_csv/`;
  const csvNames = [...Deno.readDirSync(csvDir)].map((e) => e.name).sort();
  const tbDir = `${TESTDATA}deepspeed_tensorboard/`;
  const tbNames = [...Deno.readDirSync(tbDir)].map((e) => e.name).sort();
  const jsonl = await Deno.readFile(`${TESTDATA}deepspeed_parity.jsonl`);
  const losses = dec.decode(jsonl).trim().split("\n").map((l) => JSON.parse(l).loss as number);
  const log = losses.map((loss, i) => `[rank0] Step ${i + 1}, Loss: ${loss}, Time: 12ms`)
    .join("\n") + "\n";
  return [
    { name: "jsonl", files: [jsonl], parse: ([f]) => parseJsonl(dec.decode(f)), text: true },
    {
      name: "deepspeed-csv",
      files: csvNames.map((n) => Deno.readFileSync(csvDir + n)),
      parse: (fs) =>
        parseDeepspeedCsv(fs.map((f, i) => ({ name: csvNames[i], text: dec.decode(f) })), SAMPLES),
      text: true,
    },
    { name: "log", files: [enc.encode(log)], parse: ([f]) => parseLog(dec.decode(f)), text: true },
    {
      name: "tensorboard",
      files: tbNames.map((n) => Deno.readFileSync(tbDir + n)),
      parse: (fs) => parseTensorboard(fs.map((bytes, i) => ({ name: tbNames[i], bytes })), SAMPLES),
      text: false,
    },
  ];
}

/** One random mutation of `bytes`; returns the mutated copy and what was done. */
function mutate(bytes: Uint8Array, random: () => number, text: boolean): [Uint8Array, string] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)];
  const at = () => Math.floor(random() * bytes.length);
  const kinds = text
    ? ["truncate", "flip", "huge", "type", "duplicate", "drop", "swap", "bytes"]
    : ["truncate", "flip", "bytes", "length", "crc", "duplicate-record"];
  const kind = pick(kinds);
  const out = bytes.slice();
  switch (kind) {
    case "truncate":
      return [bytes.slice(0, at()), kind];
    case "flip": {
      for (let n = 1 + Math.floor(random() * 3); n > 0; n--) out[at()] ^= 1 << (random() * 8 | 0);
      return [out, kind];
    }
    case "bytes": {
      const i = at();
      const junk = Uint8Array.from({ length: 1 + (random() * 8 | 0) }, () => random() * 256 | 0);
      return [new Uint8Array([...bytes.slice(0, i), ...junk, ...bytes.slice(i)]), kind];
    }
    case "huge":
    case "type": {
      const text = dec.decode(bytes);
      const numbers = [...text.matchAll(/-?\d+(\.\d+)?([eE][-+]?\d+)?/g)];
      if (numbers.length === 0) return [out, kind];
      const m = pick(numbers);
      const by = kind === "huge" ? pick(HUGE) : pick(WRONG_TYPES);
      return [enc.encode(text.slice(0, m.index) + by + text.slice(m.index! + m[0].length)), kind];
    }
    case "duplicate":
    case "drop":
    case "swap": {
      const lines = dec.decode(bytes).split("\n");
      const i = Math.floor(random() * lines.length);
      const j = Math.floor(random() * lines.length);
      if (kind === "duplicate") lines.splice(i, 0, lines[i]);
      else if (kind === "drop") lines.splice(i, 1);
      else [lines[i], lines[j]] = [lines[j], lines[i]];
      return [enc.encode(lines.join("\n")), kind];
    }
    case "length":
    case "crc":
    case "duplicate-record":
      if (recordOffsets(bytes).length === 0) return [out, kind];
  }
  switch (kind) {
    case "length": {
      // TFRecord framing: u64 length, u32 masked CRC of it, payload, u32 CRC. Corrupt a length.
      const view = new DataView(out.buffer);
      const offsets = recordOffsets(bytes);
      const o = pick(offsets);
      view.setUint32(o, pick([0, 1, 0xffffffff, view.getUint32(o, true) + 1]), true);
      return [out, kind];
    }
    case "crc": {
      const offsets = recordOffsets(bytes);
      const o = pick(offsets);
      const length = Number(new DataView(bytes.buffer).getBigUint64(o, true));
      out[pick([o + 8, o + 12 + length]) + (random() * 4 | 0)] ^= 0xff;
      return [out, kind];
    }
    default: { // duplicate-record
      const offsets = recordOffsets(bytes);
      const k = Math.floor(random() * offsets.length);
      const end = offsets[k + 1] ?? bytes.length;
      return [new Uint8Array([...bytes, ...bytes.slice(offsets[k], end)]), kind];
    }
  }
}

function recordOffsets(bytes: Uint8Array): number[] {
  const offsets: number[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let o = 0; o + 12 <= bytes.length;) {
    offsets.push(o);
    o += 16 + Number(view.getBigUint64(o, true));
  }
  return offsets;
}

/** The exact lane on `loss` over the original's steps, as `parity compare --lane exact` judges. */
function judge(original: MetricSeries, mutated: MetricSeries) {
  const from = original.steps[0];
  const to = original.steps[original.steps.length - 1];
  const diagnostics: Diagnostic[] = [];
  return judgeSeries(
    {
      name: "a~b",
      a: "a",
      b: "b",
      metric: "loss",
      lane: "exact",
      window: { from, to },
      rtol: 0,
      atol: 0,
      max_failures: 0,
      explicit: true,
      laneReason: "fuzz",
    },
    original,
    mutated,
    unionWindow(original, mutated, "loss", from, to),
    {
      noise: { repeats: 0, identical: true },
      tolerance: { rtol: 0, atol: 0, max_failures: 0 },
      diagnostics,
    },
  );
}

/** Whether every original loss is in `mutated` at its step with the same bits. */
function sameEvidence(original: MetricSeries, mutated: MetricSeries): boolean {
  const bits = (x: number) => new BigUint64Array(new Float64Array([x]).buffer)[0];
  const index = new Map([...mutated.steps].map((s, i) => [s, i]));
  return [...original.steps].every((step, i) => {
    const j = index.get(step);
    return j !== undefined && mutated.present.loss?.[j] === 1 &&
      bits(mutated.values.loss[j]) === bits(original.values.loss[i]);
  });
}

for (const target of await targets()) {
  Deno.test(`fuzz: the ${target.name} reader, ${CASES} mutated inputs`, () => {
    const original = target.parse(target.files);
    assert.ok(original.steps.length >= 6 && !original.diagnostics.some((d) => d.level === "error"));
    assert.equal(judge(original, original).verdict, "PASS", "the unmutated evidence passes");
    const random = seededRandom(0x26 + target.name.length);
    const outcomes: Record<string, number> = {};
    const codes: Record<string, number> = {};
    for (let n = 0; n < CASES; n++) {
      const files = target.files.slice();
      const done: string[] = [];
      for (let k = 1 + Math.floor(random() * 2); k > 0; k--) {
        const f = Math.floor(random() * files.length);
        const [bytes, kind] = mutate(files[f], random, target.text);
        files[f] = bytes;
        done.push(kind);
      }
      const what = `case ${n} (${done.join("+")})`;
      let series: MetricSeries;
      try {
        series = target.parse(files);
      } catch (error) {
        throw new Error(`${target.name} ${what}: the reader threw ${error}`);
      }
      for (const d of series.diagnostics) {
        assert.ok(KNOWN_CODES.has(d.code), `${what}: unknown diagnostic code ${d.code}`);
        assert.ok(d.message.length > 0, `${what}: ${d.code} without a message`);
        codes[d.code] = (codes[d.code] ?? 0) + 1;
      }
      const verdict = judge(original, series);
      const errors = series.diagnostics.filter((d) => d.level === "error");
      if (verdict.verdict === "PASS") {
        assert.ok(sameEvidence(original, series), `${what}: PASS on changed evidence`);
        assert.equal(errors.length, 0, `${what}: PASS despite reader errors`);
        const key = series.diagnostics.length === 0 ? "PASS" : "PASS with info notes";
        outcomes[key] = (outcomes[key] ?? 0) + 1;
      } else {
        assert.ok(
          errors.length > 0 || (verdict.reason ?? "").length > 0,
          `${what}: ${verdict.verdict} without a named reason`,
        );
        // FAIL outranks ERROR (README, "Exit codes"): a changed value next to a corrupt record
        // is still a proven difference; the reader's error stays named beside it.
        const key = errors.length > 0 ? `${verdict.verdict} with reader errors` : verdict.verdict;
        outcomes[key] = (outcomes[key] ?? 0) + 1;
      }
    }
    console.log(
      `${target.name}: ${JSON.stringify(outcomes)}; diagnostics ${JSON.stringify(codes)}`,
    );
  });
}

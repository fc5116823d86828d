import assert from "node:assert/strict";
import { parseJsonl, readJsonl } from "./jsonl.ts";
import { READER_CODES, valueAt } from "./series.ts";
import { jsonl, withTempDir } from "../../test/_testing/metrics_fixtures.ts";

function codes(text: string): string[] {
  return parseJsonl(text).diagnostics.map((d) => d.code);
}

function find(text: string, code: string) {
  const found = parseJsonl(text).diagnostics.find((d) => d.code === code);
  assert.ok(found, `expected diagnostic ${code}`);
  return found;
}

Deno.test("parseJsonl() reads step records and events into aligned columns", () => {
  const series = parseJsonl(jsonl([
    { step: 1, loss: 2.7182818284590451, lr: 0.0003 },
    { step: 2, loss: 2.5, grad_norm: 0.91, phase: "x" },
    { event: "saved", step: 2, digests: { params: "ab", rng: "cd" } },
    { step: 3, loss: 2.25, lr: 0.0001 },
  ]));
  assert.deepEqual([...series.steps], [1, 2, 3]);
  assert.deepEqual([...series.values.loss], [2.7182818284590451, 2.5, 2.25]);
  assert.deepEqual([...series.present.lr], [1, 0, 1]);
  assert.deepEqual([...series.present.grad_norm], [0, 1, 0]);
  assert.equal(series.values.phase, undefined, "string fields are not metrics");
  assert.equal(valueAt(series, "lr", 2), undefined);
  assert.equal(valueAt(series, "lr", 3), 0.0001);
  assert.equal(series.events.length, 1);
  assert.equal(series.events[0].event, "saved");
  assert.equal(series.events[0].step, 2);
  assert.equal(series.events[0].line, 3);
  assert.deepEqual(series.events[0].fields.digests, { params: "ab", rng: "cd" });
  assert.deepEqual(series.diagnostics, []);
});

Deno.test("parseJsonl() fast path agrees with JSON.parse on awkward numbers", () => {
  const numbers = [
    "0",
    "-0",
    "0.1",
    "1e-7",
    "1E+2",
    "-2.5e-3",
    "123456789012345678",
    "5e-324",
    "1.7976931348623157e308",
    "2.7182818284590451",
    "0.30000000000000004",
    "9007199254740993",
    "1e22",
    "1e23",
    "123.456e-30",
  ];
  const text = numbers.map((n, i) => `{"step": ${i + 1}, "loss": ${n}}\n`).join("");
  const series = parseJsonl(text);
  assert.deepEqual(series.diagnostics, []);
  numbers.forEach((n, i) => assert.ok(Object.is(series.values.loss[i], JSON.parse(n)), n));
});

Deno.test("parseJsonl() names a NaN literal loss", () => {
  const text = '{"step": 1, "loss": 2.5}\n{"step": 2, "loss": NaN}\n{"step": 3, "loss": 2.4}\n';
  const d = find(text, READER_CODES.nonFinite);
  assert.equal(d.level, "error");
  assert.equal(d.step, 2);
  assert.equal(d.metric, "loss");
  const series = parseJsonl(text);
  assert.ok(Number.isNaN(series.values.loss[1]));
  assert.equal(series.present.loss[1], 1, "a logged NaN is present, not absent");
});

Deno.test("parseJsonl() names Infinity literals and overflowing numbers", () => {
  const text = '{"step": 1, "loss": -Infinity}\n{"step": 2, "loss": 1e999}\n';
  const d = find(text, READER_CODES.nonFinite);
  assert.equal(d.count, 2);
  const series = parseJsonl(text);
  assert.equal(series.values.loss[0], Number.NEGATIVE_INFINITY);
  assert.equal(series.values.loss[1], Number.POSITIVE_INFINITY);
});

Deno.test('parseJsonl() names "nan" strings as non-finite', () => {
  const text = jsonl([{ step: 1, loss: "nan" }, { step: 2, loss: 1, lr: "inf" }]);
  const d = find(text, READER_CODES.nonFinite);
  assert.equal(d.count, 2);
  assert.ok(Number.isNaN(parseJsonl(text).values.loss[0]));
});

Deno.test("parseJsonl() names a non-numeric loss", () => {
  const text = jsonl([{ step: 1, loss: "2.5x" }, { step: 2, loss: null }, { step: 3, loss: 2 }]);
  const d = find(text, READER_CODES.nonNumeric);
  assert.equal(d.count, 2);
  assert.equal(d.step, 1);
});

Deno.test("parseJsonl() names a missing loss", () => {
  const d = find(jsonl([{ step: 1, loss: 2 }, { step: 2, lr: 1 }]), READER_CODES.missingLoss);
  assert.equal(d.level, "error");
  assert.equal(d.step, 2);
});

Deno.test("parseJsonl() notes duplicate steps with identical values as info", () => {
  const text = jsonl([{ step: 1, loss: 2 }, { step: 2, loss: 1.5 }, { step: 2, loss: 1.5 }]);
  const d = find(text, READER_CODES.duplicateSame);
  assert.equal(d.level, "info");
  assert.ok(!codes(text).includes(READER_CODES.duplicateConflict));
  assert.deepEqual([...parseJsonl(text).steps], [1, 2]);
});

Deno.test("parseJsonl() names duplicate steps with different values", () => {
  const text = jsonl([{ step: 1, loss: 2 }, { step: 2, loss: 1.5 }, { step: 2, loss: 1.25 }]);
  const d = find(text, READER_CODES.duplicateConflict);
  assert.equal(d.level, "error");
  assert.equal(d.step, 2);
  assert.match(d.message, /1\.5 then 1\.25/);
  assert.equal(parseJsonl(text).values.loss[1], 1.25, "the later record wins");
});

Deno.test("parseJsonl() names steps going backwards and sorts them", () => {
  const text = jsonl([{ step: 1, loss: 3 }, { step: 3, loss: 2 }, { step: 2, loss: 2.5 }]);
  const d = find(text, READER_CODES.backwards);
  assert.equal(d.level, "error");
  assert.match(d.message, /step 2 after step 3/);
  const series = parseJsonl(text);
  assert.deepEqual([...series.steps], [1, 2, 3]);
  assert.deepEqual([...series.values.loss], [3, 2.5, 2]);
});

Deno.test("parseJsonl() names a truncated last line", () => {
  const text = '{"step": 1, "loss": 2.5}\n{"step": 2, "loss": 2.4}\n{"step": 3, "lo';
  const d = find(text, READER_CODES.truncated);
  assert.equal(d.level, "error");
  assert.match(d.message, /line 3 \(no final newline\)/);
  assert.ok(!codes(text).includes(READER_CODES.unparseable));
  assert.deepEqual([...parseJsonl(text).steps], [1, 2]);
});

Deno.test("parseJsonl() names an unparseable middle line", () => {
  const text = '{"step": 1, "loss": 2.5}\nnot json\n[1, 2]\n{"step": 2, "loss": 2.4}\n';
  const d = find(text, READER_CODES.unparseable);
  assert.equal(d.count, 2);
  assert.ok(!codes(text).includes(READER_CODES.truncated));
});

Deno.test("parseJsonl() names records without an integer step", () => {
  const text = jsonl([{ step: 1, loss: 2 }, { step: 1.5, loss: 2 }, { step: "3", loss: 2 }, {
    loss: 1,
  }]);
  assert.equal(find(text, READER_CODES.invalidStep).count, 3);
});

Deno.test("parseJsonl() aggregates many identical findings into one diagnostic", () => {
  const lines = Array.from({ length: 5000 }, (_, i) => `{"step": ${i + 1}, "loss": NaN}`);
  const series = parseJsonl(lines.join("\n") + "\n");
  const nonFinite = series.diagnostics.filter((d) => d.code === READER_CODES.nonFinite);
  assert.equal(nonFinite.length, 1);
  assert.equal(nonFinite[0].count, 5000);
  assert.match(nonFinite[0].message, /and 4997 more/);
});

Deno.test("parseJsonl() reports an empty file", () => {
  assert.deepEqual(codes(""), [READER_CODES.empty]);
  assert.deepEqual(codes('{"event": "loaded", "step": 3}\n'), [READER_CODES.empty]);
});

Deno.test("readJsonl() names a missing file instead of throwing", async () => {
  await withTempDir(async (dir) => {
    const series = await readJsonl(`${dir}/nope.jsonl`);
    assert.equal(series.diagnostics[0].code, READER_CODES.missing);
    assert.match(series.diagnostics[0].message, /does not exist/);
    await Deno.writeTextFile(`${dir}/m.jsonl`, jsonl([{ step: 1, loss: 1 }]));
    assert.equal((await readJsonl(`${dir}/m.jsonl`)).values.loss[0], 1);
  });
});

Deno.test("parseJsonl() handles CRLF line ends and blank lines", () => {
  const series = parseJsonl('{"step": 1, "loss": 2}\r\n\r\n{"step": 2, "loss": 1}\r\n');
  assert.deepEqual(series.diagnostics, []);
  assert.deepEqual([...series.values.loss], [2, 1]);
});

Deno.test("parseJsonl() reads non-ASCII content with correct offsets", () => {
  const text = '{"step": 1, "loss": 2.7182818284590451, "note": "é"}\n' +
    '{"step": 2, "loss": 2.5, "λ": 0.5}\n{"step": 3, "loss": 1.2345678901234567}\n';
  const series = parseJsonl(text);
  assert.deepEqual(series.diagnostics, []);
  assert.deepEqual([...series.values.loss], [2.7182818284590451, 2.5, 1.2345678901234567]);
  assert.deepEqual([...series.values["λ"]], [Number.NaN, 0.5, Number.NaN]);
});

Deno.test("parseJsonl() rejects numbers JSON forbids even where Number() would accept them", () => {
  for (const bad of ["+1", ".5", "01", "1.", "1.e5", "-"]) {
    const series = parseJsonl(`{"step": 1, "loss": ${bad}}\n{"step": 2, "loss": 1}\n`);
    assert.ok(
      series.diagnostics.some((d) => d.code === READER_CODES.unparseable),
      `${bad} should be unparseable`,
    );
  }
});

Deno.test("parseJsonl() fast path is exact for 16- and 17-digit mantissas", () => {
  // Random doubles round-trip through their shortest form (16-17 significant digits).
  const values = Array.from({ length: 2000 }, (_, i) => Math.sin(i + 1) * 10 ** ((i % 40) - 20));
  values.push(9007199254740991, 9007199254740993e-10, 0.1 + 0.2, 2 ** -1074);
  const text = values.map((v, i) => `{"step": ${i + 1}, "loss": ${v}}\n`).join("");
  const series = parseJsonl(text);
  values.forEach((v, i) => assert.ok(Object.is(series.values.loss[i], v), String(v)));
});

Deno.test("parseJsonlBytes: a line over 1 MiB is a metrics-line-too-long error, read in linear time", () => {
  const huge = `{"step": 3, "loss": 1, "pad": "${"x".repeat(8 * 1024 * 1024)}"}`;
  const text = `{"step": 1, "loss": 2}\n{"step": 2, "loss": 1.5}\n${huge}\n`;
  const t0 = performance.now();
  const series = parseJsonl(text);
  assert.ok(performance.now() - t0 < 3000);
  assert.deepEqual([...series.steps], [1, 2]);
  const diagnostic = series.diagnostics.find((d) => d.code === "metrics-line-too-long");
  assert.equal(diagnostic?.level, "error");
});

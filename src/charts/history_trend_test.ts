import assert from "node:assert/strict";
import {
  historyTrendSpec,
  trendMarks,
  type TrendPoint,
  UNMEASURED_LABEL,
  ZERO_LABEL,
} from "./history_trend.ts";
import { SERIES_RANGE, VERDICT_RANGE } from "./_spec.ts";
import {
  compilesCleanly,
  type Json,
  marksOf,
  nodes,
  rendersCleanly,
  svgTexts,
} from "./_testing.ts";

function point(
  time: string,
  verdict: string,
  maxUlp: number | null,
  comparison = "baseline~resume-universal",
): TrendPoint {
  return {
    time,
    experiment: "nightly-quickstart",
    run_id: `run-${time}`,
    comparison,
    verdict,
    max_abs: maxUlp === null ? null : maxUlp * 1e-7,
    first_divergent_step: verdict === "FAIL" ? 32 : null,
    max_ulp: maxUlp,
    ulp_unit: "f32",
    href: `../nightly-quickstart/run-${time}/report.html`,
  };
}

/** The rows a layer of the trend draws: the top-level table through the layer's filters. */
function drawn(spec: Json, layer: Json): Json[] {
  return (spec.data.values as Json[]).filter((row) =>
    (layer.transform ?? []).every((t: Json) =>
      typeof t.filter === "string"
        ? (t.filter === "datum.strip === null") === (row.strip === null)
        : row[t.filter.field] === t.filter.equal
    )
  );
}

// PASS, PASS (drifting by ULPs), FAIL, FAIL, PASS, PASS: three verdict runs.
const points = [
  point("2026-11-28T02:00:00Z", "PASS", 3),
  point("2026-11-28T03:00:00Z", "PASS", 5),
  point("2026-11-28T04:00:00Z", "FAIL", 2e8),
  point("2026-11-28T05:00:00Z", "FAIL", 3e8),
  point("2026-11-28T06:00:00Z", "PASS", 4),
  point("2026-11-28T07:00:00Z", "PASS", 0),
  point("2026-11-28T08:00:00Z", "ERROR", null),
];

Deno.test("historyTrendSpec() never draws a line from a PASS point to a FAIL point", async () => {
  const spec: Json = historyTrendSpec(points);
  await compilesCleanly(spec);
  const line = marksOf(spec, "line")[0];
  assert.deepEqual(line.encoding.detail, { field: "segment", type: "nominal" });
  const bySegment = new Map<string, Json[]>();
  for (const p of drawn(spec, line)) {
    bySegment.set(p.segment, [...(bySegment.get(p.segment) ?? []), p]);
  }
  for (const [segment, members] of bySegment) {
    assert.equal(
      new Set(members.map((m) => m.verdict)).size,
      1,
      `segment ${segment} mixes verdicts`,
    );
  }
  // Runs of the same verdict are still joined: 2 PASS, 2 FAIL, then 1 PASS on the log axis.
  assert.deepEqual([...bySegment.values()].map((m) => m.length), [2, 2, 1]);
});

Deno.test("historyTrendSpec() keeps exact zeros and unmeasured runs off the log axis", () => {
  const spec: Json = historyTrendSpec(points);
  const logY = nodes(spec).find((n) => n.field === "value" && n.scale?.type === "log");
  assert.ok(logY, "a log ULP axis");
  assert.ok(logY.scale.domain[0] > 0);
  for (const layer of [...marksOf(spec, "line"), marksOf(spec, "point")[0]]) {
    const onAxis = drawn(spec, layer);
    assert.ok(onAxis.length === 5 && onAxis.every((p) => p.value > 0), "no log(0), no null");
  }
  const strip = nodes(spec).find((n) => n.encoding?.y?.field === "strip");
  assert.deepEqual(
    drawn(spec, strip).map((p: Json) => [p.strip, p.verdict]),
    [[ZERO_LABEL, "PASS"], [UNMEASURED_LABEL, "ERROR"]],
  );
});

Deno.test("historyTrendSpec() colours series apart from the verdict colours and links each point", () => {
  const spec: Json = historyTrendSpec([
    ...points,
    point("2026-11-28T02:00:00Z", "PASS", 0, "baseline~resume-native"),
  ]);
  const fill = nodes(spec).find((n) => n.encoding?.fill).encoding;
  assert.deepEqual(fill.fill.scale.range, SERIES_RANGE);
  assert.ok(SERIES_RANGE.every((c) => !VERDICT_RANGE.includes(c)));
  assert.equal(fill.stroke.field, "verdict");
  assert.equal(fill.shape.field, "verdict");
  assert.deepEqual(fill.href, { field: "href" });
  assert.ok(
    (spec.data.values as Json[]).every((p) => p.href.endsWith("report.html")),
  );
});

Deno.test("trendMarks() labels runs with the shortest time format that tells them apart", () => {
  const sameMinute = trendMarks([
    point("2026-11-30T17:32:04Z", "PASS", 1),
    point("2026-11-30T17:32:24Z", "PASS", 1),
  ]);
  assert.deepEqual(sameMinute.map((m) => m.run), ["11-30 17:32:04", "11-30 17:32:24"]);
  const days = trendMarks([
    point("2026-11-28T02:00:00Z", "PASS", 1),
    point("2026-11-29T02:00:00Z", "PASS", 1),
  ]);
  assert.deepEqual(days.map((m) => m.run), ["11-28", "11-29"]);
});

Deno.test("historyTrendSpec() renders distinct time labels and ULP ticks as the tables print them", async () => {
  const svg = await rendersCleanly(historyTrendSpec(points));
  const texts = svgTexts(svg);
  const times = texts.filter((t) => /^11-28 0\d:00$/.test(t));
  assert.equal(times.length, new Set(times).size, "no repeated time label");
  assert.ok(times.length >= 4, times.join(" | "));
  const ulpTicks = texts.filter((t) => /^\d{1,3}(\u202f\d{3})+$/.test(t));
  assert.ok(ulpTicks.length >= 3, `ULP ticks print like count(): ${texts.join(" | ")}`);
});

Deno.test("historyTrendSpec() without ULPs (older history rows) falls back to max |b − a|", () => {
  const legacy = points.map(({ max_ulp: _u, ulp_unit: _n, href: _h, ...p }) => p);
  const spec: Json = historyTrendSpec(legacy);
  assert.match(JSON.stringify(spec), /max \|b − a\| \(log\)/);
  const onAxis = drawn(spec, marksOf(spec, "line")[0]);
  assert.deepEqual(onAxis.map((p) => p.value), [3e-7, 5e-7, 2e8 * 1e-7, 3e8 * 1e-7, 4e-7]);
});

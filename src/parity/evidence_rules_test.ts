import assert from "node:assert/strict";
import { withTempDir } from "../../test/_testing/metrics_fixtures.ts";
import { scheduleDiagnostics } from "./schedule_bounds.ts";
import { DRIFT_DEFAULTS, TOLERANCE_DEFAULTS } from "../types/defaults.ts";
import type { PhaseSpec } from "../types/phase_spec.ts";
import type { Lane } from "../types/judge_settings.ts";
import type { ComparisonSummary, Diagnostic } from "../types/summary.ts";
import { evaluateRun } from "./evaluate.ts";
import { judge as judgeRun } from "./judge.ts";
import type { PhaseEvidence } from "./types.ts";

const STEPS = 24;
const SAVE_AT = 12;
const WINDOW = { from: SAVE_AT + 1, to: STEPS };

/** A loss with full float64 digits. */
function loss(step: number): number {
  return 2 + Math.exp(-step / 7) + Math.sin(step) * 1e-3;
}

/** One metrics line; `NaN` is written as the literal Python's json.dumps writes. */
type Line = { step: number; loss: number };

/** What a row of the table needs: the two sides, and what the experiment sets. */
interface Situation {
  baseline: Line[];
  resume: Line[];
  repeat?: Line[];
  window?: { from: number; to: number };
}

function lines(from: number, to: number, f: (s: number) => number = loss): Line[] {
  const out: Line[] = [];
  for (let s = from; s <= to; s++) out.push({ step: s, loss: f(s) });
  return out;
}

const baseline = () => lines(1, STEPS);
const resume = (f: (s: number) => number = loss) => lines(WINDOW.from, STEPS, f);
const without = (records: Line[], step: number) => records.filter((r) => r.step !== step);
const at = (records: Line[], step: number, value: number) =>
  records.map((r) => r.step === step ? { ...r, loss: value } : r);
const round = (digits: number) => (s: number) => Number(loss(s).toFixed(digits));

/** Every row of docs/parity.md "Evidence rules", by its situation: how to build it. */
const CASES: Record<string, () => Situation> = {
  "a window step is missing on one side": () => ({
    baseline: baseline(),
    resume: without(resume(), 15),
  }),
  "a window step is missing from both sides": () => ({
    baseline: without(baseline(), 15),
    resume: without(resume(), 15),
  }),
  "a value is NaN or infinite on one side": () => ({
    baseline: baseline(),
    resume: at(resume(), 15, Number.NaN),
  }),
  "a value is NaN or infinite on both sides": () => ({
    baseline: at(baseline(), 15, Number.NaN),
    resume: at(resume(), 15, Number.NaN),
  }),
  "the window holds no step": () => ({
    baseline: baseline(),
    resume: resume(),
    window: { from: 20, to: 19 },
  }),
  "the window holds 1 step": () => ({
    baseline: baseline(),
    resume: resume(),
    window: { from: 13, to: 13 },
  }),
  "one side is rounded, the values agree within the rounding step": () => ({
    baseline: baseline(),
    resume: resume(round(4)),
  }),
  "both sides are rounded, the values agree within the rounding step": () => ({
    baseline: lines(1, STEPS, round(4)),
    resume: resume(round(4)),
  }),
  "one side is rounded, a value differs beyond the rounding step": () => ({
    baseline: baseline(),
    resume: resume((s) => Number((loss(s) + (s === 15 ? 0.01 : 0)).toFixed(4))),
  }),
  "one side is rounded, the rounding step fits within the tolerance": () => ({
    baseline: baseline(),
    resume: resume(round(4)),
  }),
  "one side is rounded coarser than the tolerance, values agree within it": () => ({
    baseline: baseline(),
    resume: resume(round(2)),
  }),
  "the repeated baselines differ": () => ({
    baseline: baseline(),
    resume: resume(),
    repeat: lines(1, STEPS, (s) => loss(s) * (1 + 1e-9)),
  }),
  "an input's metrics have a reader error": () => ({
    // Step 3 twice with different values (outside the window: only the reader's error speaks).
    baseline: [{ step: 3, loss: 9 }, ...baseline()],
    resume: resume(),
  }),
  "an input logs a step beyond its schedule": () => ({
    baseline: baseline(),
    resume: [...resume(), { step: 1e6, loss: 2 }],
  }),
  "a resume logs a step at or before the save point": () => ({
    baseline: baseline(),
    resume: [{ step: 5, loss: loss(5) }, ...resume()],
  }),
};

/** One row of the table. */
interface Row {
  situation: string;
  lanes: Lane[];
  verdict: string;
  code: string;
}

/** The rows of docs/parity.md's "Evidence rules" table. */
async function tableRows(): Promise<Row[]> {
  const doc = await Deno.readTextFile(new URL("../../docs/parity.md", import.meta.url));
  const section = doc.split(/^## Evidence rules$/m)[1]?.split(/^## /m)[0];
  assert.ok(section, 'docs/parity.md has a "## Evidence rules" section');
  const rows = section.split("\n").filter((l) => l.startsWith("|")).slice(2);
  return rows.map((line) => {
    const [situation, lanes, verdict, code] = line.split("|").slice(1, -1).map((c) => c.trim());
    return {
      situation,
      lanes: lanes.split(",").map((l) => l.trim() as Lane),
      verdict,
      code: code.replace(/`/g, ""),
    };
  });
}

/** Writes both sides, runs the engine and the judge, returns the one comparison and the run. */
async function judge(situation: Situation, lane: Lane) {
  return await withTempDir(async (dir) => {
    const phases: PhaseEvidence[] = [];
    const add = async (name: string, role: PhaseEvidence["role"], records: Line[]) => {
      const path = `${dir}/${name}.jsonl`;
      const text = records.map((r) =>
        `{"step": ${r.step}, "loss": ${Number.isNaN(r.loss) ? "NaN" : JSON.stringify(r.loss)}}\n`
      ).join("");
      await Deno.writeTextFile(path, text);
      phases.push({ name, role, status: "ok", metricsPath: path, topology: "w2" });
    };
    await add("baseline", "baseline", situation.baseline);
    await add("resume", "resume", situation.resume);
    if (situation.repeat) await add("baseline-repeat-1", "repeat", situation.repeat);
    const evaluation = await evaluateRun({
      steps: STEPS,
      saveAt: SAVE_AT,
      metrics: ["loss"],
      tolerance: TOLERANCE_DEFAULTS,
      drift: DRIFT_DEFAULTS,
      compare: [{
        a: "baseline",
        b: "resume",
        metric: "loss",
        lane,
        window: situation.window ?? WINDOW,
      }],
      phases,
    });
    // The producer of the schedule-bound diagnostics.
    const specs = [
      { name: "baseline", role: "baseline", stopAt: STEPS },
      { name: "resume", role: "resume", stopAt: STEPS },
    ] as unknown as PhaseSpec[];
    const judgement = judgeRun({
      phases: [],
      resumeKinds: {},
      saveAt: SAVE_AT,
      warnings: [],
      metrics: evaluation,
      scheduleBounds: scheduleDiagnostics(specs, evaluation.series, SAVE_AT),
      planSync: [],
      planExecutions: [],
      interrupted: null,
      reportFailures: [],
    });
    const comparison = judgement.comparisons.find((c) => c.b === "resume" && c.lane === lane);
    assert.ok(comparison, "the comparison was judged");
    return { comparison, judgement };
  });
}

function describe(c: ComparisonSummary, diagnostics: Diagnostic[]): string {
  return `${c.verdict} ${JSON.stringify(c.codes)}: ${c.reason}\n` +
    diagnostics.map((d) => `  ${d.level} ${d.code}: ${d.message}`).join("\n");
}

Deno.test("evidence rules: every row of docs/parity.md has a case and every case a row", async () => {
  const rows = await tableRows();
  assert.ok(rows.length >= 10, `${rows.length} rows`);
  assert.deepEqual(rows.map((r) => r.situation).sort(), Object.keys(CASES).sort());
});

Deno.test("evidence rules: each row's situation gets the row's verdict and code in every lane", async () => {
  for (const row of await tableRows()) {
    const build = CASES[row.situation];
    if (build === undefined) continue; // the test above names it
    for (const lane of row.lanes) {
      const { comparison, judgement } = await judge(build(), lane);
      const what = `${row.situation} (${lane}): ${describe(comparison, judgement.diagnostics)}`;
      assert.equal(comparison.verdict, row.verdict, what);
      assert.ok(comparison.codes?.includes(row.code), what);
      // The run is never better than the comparison (FAIL > ERROR > ABSTAIN > PASS).
      const order = ["PASS", "ABSTAIN", "ERROR", "FAIL"];
      assert.ok(order.indexOf(judgement.verdict) >= order.indexOf(row.verdict), what);
    }
  }
});

Deno.test("evidence rules: one-sided rounding is no false FAIL at the first resumed step", async () => {
  const { comparison, judgement } = await judge(
    CASES["one side is rounded, the values agree within the rounding step"](),
    "exact",
  );
  assert.equal(comparison.verdict, "ERROR");
  assert.equal(comparison.first_divergent_step, null);
  assert.ok(!judgement.findings.some((f) => f.code === "cause-consumed-before-first-step"));
  const rounded = judgement.diagnostics.filter((d) => d.code === "metrics-rounded");
  assert.deepEqual(rounded.map((d) => [d.phase, d.level]), [["resume", "error"]]);
});

Deno.test("evidence rules: a real difference on a rounded side FAILs at its own step", async () => {
  const { comparison } = await judge(
    CASES["one side is rounded, a value differs beyond the rounding step"](),
    "exact",
  );
  assert.equal(comparison.verdict, "FAIL");
  assert.equal(comparison.first_divergent_step, 15);
  assert.match(comparison.reason ?? "", /differ beyond the rounding step/);
});

Deno.test("evidence rules: a step beyond the schedule caps a passing comparison and says so", async () => {
  const { comparison, judgement } = await judge(
    CASES["an input logs a step beyond its schedule"](),
    "exact",
  );
  assert.equal(comparison.verdict, "ERROR");
  assert.match(comparison.reason ?? "", /^The metrics of resume have errors \(metrics-beyond/);
  assert.equal(judgement.verdict, "ERROR");
});

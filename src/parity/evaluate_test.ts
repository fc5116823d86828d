import assert from "node:assert/strict";
import { jsonl, withTempDir } from "../../test/_testing/metrics_fixtures.ts";
import { AUTO_TOLERANCE_DEFAULTS, DRIFT_DEFAULTS, TOLERANCE_DEFAULTS } from "../types/defaults.ts";
import { evaluateRun } from "./evaluate.ts";
import { lossesCsv } from "./losses_csv.ts";
import type { EvaluationInput, PhaseEvidence } from "./types.ts";

const STEPS = 40;
const SAVE_AT = 20;
const DIGESTS = { params: "p1", exp_avg: "e1", exp_avg_sq: "v1", rng: "r1" };

/** A loss with full float64 digits. */
function loss(step: number): number {
  return 2 + Math.exp(-step / 7) + Math.sin(step) * 1e-3;
}

function lr(step: number): number {
  return 3e-4 * Math.cos(step / 100);
}

type Rec = Record<string, unknown>;

function steps(from: number, to: number, f: (s: number) => Rec = () => ({})): Rec[] {
  const out: Rec[] = [];
  for (let s = from; s <= to; s++) out.push({ step: s, loss: loss(s), lr: lr(s), ...f(s) });
  return out;
}

interface Fixture {
  baseline?: Rec[];
  split?: Rec[];
  resumes?: Record<string, { records: Rec[]; topology?: string; status?: PhaseEvidence["status"] }>;
  repeats?: Rec[][];
}

/** Writes the fixture's metrics files and returns the evaluation input. */
async function run(
  dir: string,
  fixture: Fixture,
  extra: Partial<EvaluationInput> = {},
): Promise<EvaluationInput> {
  const phases: PhaseEvidence[] = [];
  const add = async (
    name: string,
    role: PhaseEvidence["role"],
    records: Rec[],
    more: Partial<PhaseEvidence> = {},
  ) => {
    const path = `${dir}/${name}.jsonl`;
    await Deno.writeTextFile(path, jsonl(records));
    phases.push({ name, role, status: "ok", metricsPath: path, topology: "w2", ...more });
  };
  await add("baseline", "baseline", fixture.baseline ?? steps(1, STEPS));
  await add(
    "split",
    "split",
    fixture.split ?? [...steps(1, SAVE_AT), { event: "saved", step: SAVE_AT, digests: DIGESTS }],
  );
  const resumes = fixture.resumes ?? {
    "resume-native": {
      records: [{ event: "loaded", step: SAVE_AT, digests: DIGESTS }, ...steps(SAVE_AT + 1, STEPS)],
    },
  };
  for (const [name, r] of Object.entries(resumes)) {
    const topology = r.topology ?? "w2";
    await add(name, "resume", r.records, {
      topology,
      status: r.status ?? "ok",
      // The lane resolvePlan gives this topology (its tests cover the rule).
      lane: topology === "w2"
        ? { lane: "exact", reason: "same topology as the saved checkpoint" }
        : { lane: "drift", reason: "topology differs from the saved checkpoint (w2 → w4)" },
    });
  }
  for (const [k, records] of (fixture.repeats ?? []).entries()) {
    await add(`baseline-repeat-${k + 1}`, "repeat", records);
  }
  return {
    steps: STEPS,
    saveAt: SAVE_AT,
    metrics: ["loss"],
    tolerance: TOLERANCE_DEFAULTS,
    drift: DRIFT_DEFAULTS,
    phases,
    ...extra,
  };
}

function resumeRecords(f: (s: number) => Rec = () => ({}), digests: Rec = DIGESTS): Rec[] {
  return [{ event: "loaded", step: SAVE_AT, digests }, ...steps(SAVE_AT + 1, STEPS, f)];
}

Deno.test("evaluateRun() passes a clean resume with matching digests", async () => {
  await withTempDir(async (dir) => {
    const e = await evaluateRun(await run(dir, {}));
    assert.equal(e.verdict, "PASS");
    assert.equal(e.comparisons.length, 1);
    const c = e.comparisons[0];
    assert.equal(c.name, "baseline~resume-native");
    assert.equal(c.lane, "exact");
    assert.equal(c.verdict, "PASS");
    assert.equal(c.first_step, 21);
    assert.equal(c.last_step, 40);
    assert.equal(c.compared, 20);
    assert.equal(c.last_matching_step, 40);
    assert.equal(e.state_checks[0].verdict, "PASS");
    assert.deepEqual(e.state_checks[0].compared, ["exp_avg", "exp_avg_sq", "params", "rng"]);
    assert.deepEqual(e.noise_floor, { repeats: 0, identical: true });
    assert.deepEqual([...e.series.keys()], ["baseline", "split", "resume-native"]);
    // This baseline reports no snapshot, so the save is not judged, and the run says so.
    assert.deepEqual(e.diagnostics.map((d) => [d.level, d.code]), [["info", "save-not-checked"]]);
  });
});

Deno.test("evaluateRun() fails one ULP of divergence at the first divergent step", async () => {
  await withTempDir(async (dir) => {
    const records = resumeRecords((s) =>
      s >= 25 ? { loss: loss(s) + Math.abs(loss(s)) * Number.EPSILON } : {}
    );
    const e = await evaluateRun(await run(dir, { resumes: { "resume-native": { records } } }));
    assert.equal(e.verdict, "FAIL");
    const c = e.comparisons[0];
    assert.equal(c.first_divergent_step, 25);
    assert.equal(c.last_matching_step, 24);
    assert.equal(c.divergence?.a, loss(25));
    assert.ok((c.max_ulp ?? 0) >= 1);
  });
});

Deno.test("evaluateRun() uses the drift lane on another topology", async () => {
  await withTempDir(async (dir) => {
    const records = resumeRecords((s) => ({ loss: loss(s) * (1 + 1e-9) }));
    const e = await evaluateRun(
      await run(dir, { resumes: { "resume-universal": { records, topology: "w4" } } }),
    );
    assert.equal(e.comparisons[0].lane, "drift");
    assert.equal(e.comparisons[0].verdict, "PASS");
    assert.equal(e.comparisons[0].drift?.early_limit_ulp32, 16);
    assert.ok(e.comparisons[0].drift!.early_max_ulp32 < 1);
    assert.equal(e.verdict, "PASS");
  });
});

Deno.test("evaluateRun() applies the experiment's drift thresholds to the drift lane", async () => {
  await withTempDir(async (dir) => {
    const records = resumeRecords((s) => ({ loss: loss(s) * (1 + 1e-5) }));
    const fixture = { resumes: { "resume-universal": { records, topology: "w4" } } };
    const strict = await evaluateRun(await run(dir, fixture));
    assert.equal(strict.comparisons[0].lane, "drift");
    assert.equal(strict.comparisons[0].verdict, "FAIL", "1e-5 relative is dozens of ULPs");
    assert.match(strict.comparisons[0].reason ?? "", /early window/);
    const loose = await evaluateRun(
      await run(dir, fixture, { drift: { ...DRIFT_DEFAULTS, early_ulp: 400 } }),
    );
    assert.equal(loose.comparisons[0].verdict, "PASS", loose.comparisons[0].reason);
    assert.equal(loose.comparisons[0].drift?.early_limit_ulp32, 400);
  });
});

Deno.test("evaluateRun() widens the drift lane's early bound to the derived rtol", async () => {
  await withTempDir(async (dir) => {
    const records = resumeRecords((s) => ({ loss: loss(s) * (1 + 1e-5) }));
    const judged = async (noise: number) => {
      const repeat = steps(1, STEPS, (s) => ({ loss: loss(s) * (1 + noise) }));
      const fixture = {
        repeats: [repeat],
        resumes: { "resume-universal": { records, topology: "w4" } },
      };
      return (await evaluateRun(await run(dir, fixture))).comparisons[0];
    };
    // 1e-5 relative is dozens of ULPs: within a derived 2e-5, beyond a derived 2e-6.
    assert.equal((await judged(2e-6)).verdict, "PASS");
    assert.equal((await judged(2e-7)).verdict, "FAIL");
  });
});

Deno.test("evaluateRun() fails a state check and names the differing component", async () => {
  await withTempDir(async (dir) => {
    const records = resumeRecords(() => ({}), { ...DIGESTS, rng: "r2" });
    const e = await evaluateRun(await run(dir, { resumes: { "resume-native": { records } } }));
    assert.equal(e.verdict, "FAIL", "a state FAIL fails the run although the loss matches");
    assert.equal(e.comparisons[0].verdict, "PASS");
    assert.equal(e.state_checks[0].verdict, "FAIL");
    assert.deepEqual(e.state_checks[0].differing, ["rng"]);
    assert.match(e.state_checks[0].reason ?? "", /rng/);
  });
});

Deno.test("evaluateRun() marks state checks without digests not available, never PASS", async () => {
  await withTempDir(async (dir) => {
    const records = [{ event: "loaded", step: SAVE_AT }, ...steps(SAVE_AT + 1, STEPS)];
    const e = await evaluateRun(await run(dir, { resumes: { "resume-native": { records } } }));
    assert.deepEqual(
      { verdict: e.state_checks[0].verdict, available: e.state_checks[0].available },
      { verdict: "N/A", available: false },
    );
    assert.equal(e.verdict, "PASS", "the lanes still speak");
  });
});

Deno.test("evaluateRun() makes comparisons of an incomplete phase ERROR", async () => {
  await withTempDir(async (dir) => {
    const records = resumeRecords().slice(0, 5);
    const e = await evaluateRun(
      await run(dir, { resumes: { "resume-native": { records, status: "failed" } } }),
    );
    assert.equal(e.verdict, "ERROR");
    assert.equal(e.comparisons[0].verdict, "ERROR");
    assert.equal(e.comparisons[0].reason, "phase resume-native did not complete.");
    assert.equal(e.state_checks[0].verdict, "ERROR");
    assert.ok(e.series.has("resume-native"), "partial metrics stay available for charts");
  });
});

Deno.test("evaluateRun() fails missing resumed steps", async () => {
  await withTempDir(async (dir) => {
    const records = resumeRecords().filter((r) => r.step !== 33);
    const e = await evaluateRun(await run(dir, { resumes: { "resume-native": { records } } }));
    assert.equal(e.verdict, "FAIL");
    assert.equal(e.comparisons[0].missing_steps, 1);
    assert.equal(e.comparisons[0].first_divergent_step, 33);
  });
});

Deno.test("evaluateRun() fails a NaN loss and reports the reader diagnostic", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/nan.jsonl`;
    const input = await run(dir, {});
    const lines = jsonl(resumeRecords()).replace(
      `"step":30,"loss":${loss(30)}`,
      '"step":30,"loss":NaN',
    );
    await Deno.writeTextFile(path, lines);
    input.phases[2].metricsPath = path;
    const e = await evaluateRun(input);
    assert.equal(e.verdict, "FAIL");
    assert.equal(e.comparisons[0].non_finite, 1);
    assert.ok(
      e.diagnostics.some((d) => d.code === "metrics-non-finite" && d.phase === "resume-native"),
    );
  });
});

Deno.test("evaluateRun() ABSTAINs exact lanes when repeated baselines differ", async () => {
  await withTempDir(async (dir) => {
    const repeat = steps(1, STEPS, (s) => (s === 7 ? { loss: loss(7) * (1 + 2e-7) } : {}));
    const e = await evaluateRun(await run(dir, { repeats: [steps(1, STEPS), repeat] }));
    assert.equal(e.verdict, "ABSTAIN");
    assert.equal(e.comparisons[0].verdict, "ABSTAIN");
    assert.match(e.comparisons[0].reason ?? "", /not deterministic/);
    assert.equal(e.noise_floor.repeats, 2);
    assert.equal(e.noise_floor.identical, false);
    assert.equal(e.noise_floor.spread?.length, 1);
    assert.equal(e.noise_floor.spread?.[0].step, 7);
    assert.ok(Math.abs((e.noise_floor.max_rel_deviation ?? 0) - 2e-7) < 1e-12);
  });
});

Deno.test("evaluateRun() judges a default exact lane under a noisy floor at the derived rtol", async () => {
  await withTempDir(async (dir) => {
    // Noise of 2e-7 relative in the repeat: derived rtol max(2e-7 × 10, 2^-20) = 2e-6.
    const repeat = steps(1, STEPS, (s) => ({ loss: loss(s) * (1 + 2e-7) }));
    const within = resumeRecords((s) => ({ loss: loss(s) * (1 - 1e-6) }));
    const clean = await evaluateRun(
      await run(dir, { repeats: [repeat], resumes: { "resume-native": { records: within } } }),
    );
    const derived = clean.noise_floor.derived_rtol ?? 0;
    assert.ok(Math.abs(derived - 2e-6) < 1e-15, `derived ${derived}`);
    assert.deepEqual(clean.noise_floor.derivation, {
      multiplier: 10,
      floor: 2 ** -20,
      source: "default",
    });
    assert.deepEqual(clean.comparisons.map((c) => [c.lane, c.verdict, c.rtol]), [
      ["exact", "ABSTAIN", undefined],
      ["tolerance", "PASS", derived],
    ]);
    assert.match(clean.comparisons[1].lane_reason ?? "", /noise floor.*× 10/);
    assert.equal(clean.verdict, "ABSTAIN", "the worst of ABSTAIN and PASS");

    // A lost-momentum sized bug (5e-3 relative) is far above the noise: FAIL.
    const bug = resumeRecords((s) => ({ loss: loss(s) * (1 + 5e-3) }));
    const buggy = await evaluateRun(
      await run(dir, { repeats: [repeat], resumes: { "resume-native": { records: bug } } }),
    );
    assert.deepEqual(buggy.comparisons.map((c) => [c.lane, c.verdict]), [
      ["exact", "ABSTAIN"],
      ["tolerance", "FAIL"],
    ]);
    assert.equal(buggy.comparisons[1].first_divergent_step, SAVE_AT + 1);
    assert.equal(buggy.verdict, "FAIL");
  });
});

Deno.test("evaluateRun() adds no derived lane when the floor is identical", async () => {
  await withTempDir(async (dir) => {
    const e = await evaluateRun(await run(dir, { repeats: [steps(1, STEPS)] }));
    assert.deepEqual(e.comparisons.map((c) => c.lane), ["exact"]);
    assert.equal(e.noise_floor.derived_rtol, undefined);
    assert.equal(e.noise_floor.derivation, undefined);
    assert.equal(e.verdict, "PASS");
  });
});

Deno.test("evaluateRun() keeps explicit comparisons' lanes under a noisy floor", async () => {
  await withTempDir(async (dir) => {
    const repeat = steps(1, STEPS, (s) => ({ loss: loss(s) * (1 + 2e-7) }));
    const e = await evaluateRun(
      await run(dir, { repeats: [repeat] }, {
        compare: [{ a: "baseline", b: "resume-native", metric: "loss", lane: "exact" }],
      }),
    );
    assert.deepEqual(e.comparisons.map((c) => [c.lane, c.verdict]), [["exact", "ABSTAIN"]]);
  });
});

Deno.test("evaluateRun() keeps FAIL for missing steps even under a noisy floor", async () => {
  await withTempDir(async (dir) => {
    const repeat = steps(1, STEPS, (s) => (s === 7 ? { loss: loss(7) * (1 + 2e-7) } : {}));
    const records = resumeRecords().filter((r) => r.step !== 30);
    const e = await evaluateRun(
      await run(dir, { repeats: [repeat], resumes: { "resume-native": { records } } }),
    );
    assert.equal(e.comparisons[0].verdict, "FAIL");
  });
});

Deno.test("evaluateRun() derives rtol with tolerance auto and adds a tolerance lane", async () => {
  await withTempDir(async (dir) => {
    const repeat = steps(1, STEPS, (s) => ({ loss: loss(s) * (1 + 1e-6) }));
    const resume = resumeRecords((s) => ({ loss: loss(s) * (1 - 1e-6) }));
    const e = await evaluateRun(
      await run(dir, { repeats: [repeat], resumes: { "resume-native": { records: resume } } }, {
        tolerance: { auto: true, multiplier: 3, floor: 1e-9, atol: 0, max_failures: 0 },
      }),
    );
    const derived = e.noise_floor.derived_rtol ?? 0;
    assert.ok(Math.abs(derived - 3e-6) < 1e-9, `derived ${derived}`);
    assert.deepEqual(e.comparisons.map((c) => [c.lane, c.verdict]), [
      ["exact", "ABSTAIN"],
      ["tolerance", "PASS"],
    ]);
    assert.equal(e.comparisons[1].rtol, derived);
    assert.equal(e.verdict, "ABSTAIN");
  });
});

Deno.test("evaluateRun() tolerance auto defaults to the noise rule's floor, not 1e-3", async () => {
  await withTempDir(async (dir) => {
    const repeat = steps(1, STEPS, (s) => ({ loss: loss(s) * (1 + 1e-12) }));
    const bug = resumeRecords((s) => ({ loss: loss(s) * (1 + 5e-4) }));
    const e = await evaluateRun(
      await run(dir, { repeats: [repeat], resumes: { "resume-native": { records: bug } } }, {
        tolerance: { auto: true, ...AUTO_TOLERANCE_DEFAULTS },
      }),
    );
    assert.equal(e.noise_floor.derived_rtol, 2 ** -20);
    assert.equal(e.noise_floor.derivation?.source, "tolerance-auto");
    // 5e-4 passed the old fixed 1e-3 floor; under the derived one it is a bug.
    assert.equal(e.comparisons[1].verdict, "FAIL");
    assert.equal(e.verdict, "FAIL");
  });
});

Deno.test("evaluateRun() floors the derived rtol", async () => {
  await withTempDir(async (dir) => {
    const e = await evaluateRun(
      await run(dir, { repeats: [steps(1, STEPS)] }, {
        tolerance: { auto: true, multiplier: 1.5, floor: 1e-3, atol: 0, max_failures: 0 },
      }),
    );
    assert.equal(e.noise_floor.identical, true);
    assert.equal(e.noise_floor.derived_rtol, 1e-3);
    assert.equal(e.verdict, "PASS");
  });
});

Deno.test("evaluateRun() makes an exact lane on rounded metrics ERROR", async () => {
  await withTempDir(async (dir) => {
    const rounded = (s: number) => ({ loss: Number(loss(s).toFixed(4)) });
    const e = await evaluateRun(
      await run(dir, {
        baseline: steps(1, STEPS, rounded),
        resumes: { "resume-native": { records: resumeRecords(rounded) } },
      }),
    );
    assert.equal(e.verdict, "ERROR");
    assert.equal(e.comparisons[0].verdict, "ERROR");
    assert.match(
      e.comparisons[0].reason ?? "",
      /^Metrics are rounded \(baseline, resume-native\): an exact lane is meaningless\. All 20/,
    );
    const d = e.diagnostics.filter((x) => x.code === "metrics-rounded");
    assert.deepEqual(d.map((x) => [x.level, x.phase]), [["error", "baseline"], [
      "error",
      "resume-native",
    ]]);
  });
});

Deno.test("evaluateRun() flags a save in the middle of gradient accumulation", async () => {
  await withTempDir(async (dir) => {
    const split = [
      ...steps(1, SAVE_AT),
      { event: "saved", step: SAVE_AT, micro_step: 41, grad_accum: 2, digests: DIGESTS },
    ];
    const e = await evaluateRun(await run(dir, { split }));
    const d = e.diagnostics.find((x) => x.code === "save-mid-accumulation");
    assert.equal(d?.level, "error");
    assert.equal(d?.phase, "split");
    assert.equal(e.verdict, "ERROR");
  });
});

Deno.test("evaluateRun() flags metrics counted in micro-batches", async () => {
  await withTempDir(async (dir) => {
    const e = await evaluateRun(
      await run(dir, { baseline: steps(1, 2 * STEPS) }, { gradAccum: 2 }),
    );
    assert.ok(e.diagnostics.some((x) => x.code === "step-unit-micro-batches"));
    assert.equal(e.verdict, "ERROR");
  });
});

Deno.test("evaluateRun() fails an LR schedule that differs at save_at + 1", async () => {
  await withTempDir(async (dir) => {
    const records = resumeRecords((s) => ({ lr: lr(s) * 2 }));
    const e = await evaluateRun(await run(dir, { resumes: { "resume-native": { records } } }));
    const d = e.diagnostics.find((x) => x.code === "lr-schedule-mismatch");
    assert.equal(d?.step, 21);
    assert.match(d?.message ?? "", new RegExp(`${lr(21) * 2}.*${lr(21)}`));
    assert.equal(e.comparisons[0].verdict, "PASS");
    assert.equal(e.verdict, "FAIL");
  });
});

Deno.test("evaluateRun() is ERROR with fewer than 2 resumed steps", async () => {
  await withTempDir(async (dir) => {
    const input = await run(dir, {});
    const e = await evaluateRun({ ...input, steps: SAVE_AT + 1 });
    assert.ok(e.diagnostics.some((x) => x.code === "window-too-small"));
    assert.equal(e.comparisons[0].verdict, "ERROR");
    assert.equal(e.verdict, "ERROR");
  });
});

Deno.test("evaluateRun() is ERROR when nothing is compared", async () => {
  await withTempDir(async (dir) => {
    const e = await evaluateRun(await run(dir, { resumes: {} }));
    assert.ok(e.diagnostics.some((x) => x.code === "no-comparisons"));
    assert.equal(e.verdict, "ERROR");
  });
});

Deno.test("lossesCsv() writes one column per phase with full precision", async () => {
  await withTempDir(async (dir) => {
    const e = await evaluateRun(await run(dir, {}));
    const csv = lossesCsv(e.series).split("\n");
    assert.equal(csv[0], "step,baseline,split,resume-native");
    assert.equal(csv[1], `1,${loss(1)},${loss(1)},`);
    assert.equal(csv[21], `21,${loss(21)},,${loss(21)}`);
    assert.equal(csv.length, STEPS + 2, "header, 40 rows, final newline");
    assert.equal(Number(csv[21].split(",")[1]), loss(21), "values round-trip");
  });
});

Deno.test("evaluateRun() judges the harness's read-back of the split and of the universal folder", async () => {
  await withTempDir(async (dir) => {
    const input = await run(dir, {});
    const split = input.phases.find((p) => p.role === "split")!;
    // The files hold no optimizer state (PR #7786): the save check FAILs, files alone.
    split.checkpointFiles = {
      document: { digests: { rng: "r1" }, absent: ["params", "exp_avg", "exp_avg_sq"] },
    };
    const universal = {
      digests: { params: "p1", exp_avg: "e1", exp_avg_sq: "x" },
      absent: [],
      not_read: { rng: "not in this test's folder" },
    };
    const e = await evaluateRun({
      ...input,
      converted: { phase: "convert", files: { document: universal } },
    });
    assert.equal(e.verdict, "FAIL");
    const save = e.state_checks.find((s) => s.check === "save");
    assert.deepEqual(save?.not_in_files, ["exp_avg", "exp_avg_sq", "params"]);
    const convert = e.state_checks.find((s) => s.check === "convert");
    assert.equal(convert?.phase, "convert");
    assert.deepEqual(convert?.differing, ["exp_avg_sq"]);
    assert.deepEqual(convert?.files_not_checkable, ["rng"]);
    // An unreadable folder gives no file evidence: the run is as without the key.
    split.checkpointFiles = { unreadable: "checkpoint_files: a layout it does not read" };
    const plain = await evaluateRun(input);
    assert.equal(plain.verdict, "PASS");
    assert.equal(plain.state_checks.find((s) => s.check === "save"), undefined);
  });
});

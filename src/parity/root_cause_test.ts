import assert from "node:assert/strict";
import type {
  ComparisonSummary,
  Diagnostic,
  PhaseSummary,
  StateCheckSummary,
} from "../types/summary.ts";
import { causeLine, findRootCauses, groupFailures, type RootCauseInput } from "./root_cause.ts";

const RESUMES = ["resume-native", "resume-universal", "resume-reshard", "resume-plan-balanced"];

function phase(name: string, role: PhaseSummary["role"], extra: Partial<PhaseSummary> = {}) {
  return {
    name,
    role,
    status: "ok",
    cached: false,
    wall_s: 1,
    exit_code: 0,
    ...extra,
  } as PhaseSummary;
}

/** A comparison vs the baseline; `fail` gives its first divergent step and values. */
function vs(b: string, fail?: { step: number; a: number; b: number }, extra = {}) {
  const cross = b === "resume-reshard" || b.startsWith("resume-plan");
  return {
    name: `baseline~${b}`,
    a: "baseline",
    b,
    metric: "loss",
    lane: cross ? "drift" : "exact",
    verdict: fail ? "FAIL" : "PASS",
    first_step: 21,
    last_step: 40,
    compared: 20,
    first_divergent_step: fail?.step ?? null,
    last_matching_step: null,
    max_abs: null,
    mean_abs: null,
    max_rel: null,
    max_ulp: null,
    divergence: fail ? { step: fail.step, a: fail.a, b: fail.b } : null,
    ...extra,
  } as ComparisonSummary;
}

function input(
  comparisons: ComparisonSummary[],
  options: { states?: StateCheckSummary[]; diagnostics?: Diagnostic[]; phases?: PhaseSummary[] } =
    {},
): RootCauseInput {
  return {
    comparisons,
    state_checks: options.states ??
      RESUMES.map((p) => ({ phase: p, verdict: "PASS", available: true, differing: [] })),
    diagnostics: options.diagnostics ?? [],
    phases: options.phases ?? [
      phase("baseline", "baseline"),
      phase("split", "split"),
      ...RESUMES.map((p) => phase(p, "resume")),
    ],
    noise_floor: { repeats: 0, identical: true },
    save_at: 20,
  };
}

const KINDS = {
  "resume-native": "native",
  "resume-universal": "universal",
  "resume-reshard": "universal",
  "resume-plan-balanced": "plan",
};
const big = { step: 21, a: 1.0661, b: 1.0689 };

Deno.test("findRootCauses() says nothing about a clean run", () => {
  assert.deepEqual(findRootCauses(input(RESUMES.map((p) => vs(p))), KINDS), []);
});

Deno.test("groupFailures() makes identical failures one group, baseline groups first", () => {
  const groups = groupFailures([
    { ...vs("resume-reshard", big), a: "resume-x", name: "resume-x~resume-reshard" },
    ...RESUMES.map((p) => vs(p, big)),
  ]);
  assert.equal(groups.length, 1);
  assert.equal(groups[0].members.length, 5);
  assert.equal(groups[0].more, " (+4 identical)");
  assert.equal(
    groupFailures([vs("resume-native", big), vs("resume-universal", { ...big, b: 2 })]).length,
    2,
  );
});

Deno.test("findRootCauses() cause-state-not-restored: every resume fails, digests name rng", () => {
  const states = RESUMES.map((p) => ({
    phase: p,
    verdict: "FAIL" as const,
    available: true,
    differing: ["rng"],
  }));
  const f = findRootCauses(input(RESUMES.map((p) => vs(p, big)), { states }), KINDS);
  assert.equal(f[0].code, "cause-state-not-restored");
  assert.deepEqual(f[0].state, ["rng"]);
  assert.equal(
    causeLine(f),
    "baseline~resume-native FAIL, first divergent step 21; state check names rng (+3 identical)",
  );
  assert.match(f[0].next, /Restore `rng` on load/);
});

Deno.test("findRootCauses() counts what ran: one judged resume of four is not 'every resume'", () => {
  const states = [{
    phase: "resume-native",
    verdict: "FAIL" as const,
    available: true,
    differing: ["rng"],
  }];
  // The other three resumes were not run (an --only run, or a failed split): ERROR, not judged.
  const unjudged = RESUMES.slice(1).map((p) =>
    vs(p, undefined, { verdict: "ERROR", compared: 0, first_step: null, last_step: null })
  );
  const f = findRootCauses(input([vs("resume-native", big), ...unjudged], { states }), KINDS);
  assert.equal(f[0].code, "cause-state-not-restored");
  assert.match(f[0].title, /^The one resume judged \(resume-native; 3 of 4 not\) diverges: /);
  const all = findRootCauses(
    input(RESUMES.map((p) => vs(p, big)), {
      states: RESUMES.map((p) => ({ ...states[0], phase: p })),
    }),
    KINDS,
  );
  assert.match(all[0].title, /^Every resume diverges: /);
});

Deno.test("findRootCauses() cause-converter: native passes, universal and reshard fail", () => {
  const c = [vs("resume-native"), vs("resume-universal", big), vs("resume-reshard", big)];
  const f = findRootCauses(input(c), KINDS);
  assert.equal(f[0].code, "cause-converter");
  assert.match(f[0].next, /checkpoint\.load_universal/);
});

Deno.test("findRootCauses() cause-converter: a universal folder read back intact points at the loader", () => {
  const c = [vs("resume-native"), vs("resume-universal", big), vs("resume-reshard", big)];
  const convert = { phase: "convert", check: "convert", verdict: "PASS", available: true };
  const f = findRootCauses(
    input(c, { states: [{ ...convert, differing: [] }] as StateCheckSummary[] }),
    KINDS,
  );
  assert.equal(f[0].code, "cause-converter");
  assert.match(f[0].title, /although the universal folder, read back, holds the saved state/);
  assert.match(f[0].next, /not the converter/);
});

Deno.test("findRootCauses() cause-plan: only plan resumes fail", () => {
  const c = [vs("resume-native"), vs("resume-reshard"), vs("resume-plan-balanced", big)];
  assert.equal(findRootCauses(input(c), KINDS)[0].code, "cause-plan");
});

Deno.test("findRootCauses() cause-reshard: same topology passes, another topology fails", () => {
  const c = [vs("resume-native"), vs("resume-reshard", big)];
  const f = findRootCauses(
    input(c, { phases: [phase("resume-native", "resume"), phase("resume-reshard", "resume")] }),
    {
      "resume-native": "native",
      "resume-reshard": "plan-less",
    },
  );
  assert.equal(f[0].code, "cause-reshard");
});

Deno.test("findRootCauses() cause-drift-bias: a reshard biased rather than drifting", () => {
  const c = [
    vs("resume-reshard", { step: 1101, a: 0.8, b: 0.79 }, {
      reason: "loss is not reduction-order drift: b - a has a persistent bias: mean -0.0002",
      // Rules read the lane's structured failure, never its sentence.
      drift: { failure: { test: "bias", metric: "loss", step: 1101, measured: -0.0002, bound: 5 } },
    }),
  ];
  const phases = [phase("resume-reshard", "resume")];
  assert.equal(findRootCauses(input(c, { phases }), KINDS)[0].code, "cause-drift-bias");
});

Deno.test("findRootCauses() pre-flight findings win: mid-accumulation save and LR schedule", () => {
  const c = RESUMES.map((p) => vs(p, big));
  const mid = findRootCauses(
    input(c, {
      diagnostics: [{ level: "error", code: "save-mid-accumulation", message: "micro_step 41" }],
    }),
    KINDS,
  );
  assert.equal(mid[0].code, "cause-save-mid-accumulation");
  assert.match(mid[0].next, /accumulation boundary/);
  const lr = findRootCauses(
    input(c, {
      diagnostics: [{ level: "error", code: "lr-schedule-mismatch", message: "lr 0.02 vs 0.005" }],
    }),
    KINDS,
  );
  assert.equal(lr[0].code, "cause-lr-schedule");
});

Deno.test("findRootCauses() N+1 with equal state: tiny → nondeterministic, large → consumed", () => {
  const tiny = RESUMES.map((p) => vs(p, { step: 21, a: 1, b: 1 + 4e-7 }));
  assert.equal(findRootCauses(input(tiny), KINDS)[0].code, "cause-nondeterministic");
  const large = findRootCauses(input(RESUMES.map((p) => vs(p, big))), KINDS);
  assert.equal(large[0].code, "cause-consumed-before-first-step");
  assert.match(large[0].next, /data loader or sampler seeded from the restored global RNG/);
});

Deno.test("findRootCauses() cause-divergence: a pattern it cannot read still gets a card", () => {
  const c = [vs("resume-native", { step: 25, a: 1, b: 2 }), vs("resume-universal")];
  const f = findRootCauses(input(c), KINDS);
  assert.equal(f[0].code, "cause-divergence");
});

Deno.test("findRootCauses() cause-phase-failed: the failed phase and its last log lines", () => {
  const phases = [
    phase("baseline", "baseline", {
      status: "failed",
      exit_code: 1,
      message: "exited with code 1",
      log_tail: "loading shard 3\nRuntimeError: boom\n",
    }),
  ];
  const f = findRootCauses(input([], { phases, states: [] }), KINDS);
  assert.equal(f[0].code, "cause-phase-failed");
  assert.equal(f[0].verdict, "ERROR");
  assert.equal(f[0].log_tail, "loading shard 3\nRuntimeError: boom");
  assert.equal(causeLine(f), "phase baseline failed: RuntimeError: boom");
});

Deno.test("findRootCauses() cause-update-differs: all match at N+1, fail at N+2, state equal", () => {
  const c = RESUMES.map((p) => vs(p, { step: 22, a: 1, b: 1.0001 }));
  const f = findRootCauses(input(c), KINDS);
  assert.equal(f[0].code, "cause-update-differs");
  assert.match(f[0].next, /weight decay/);
  assert.match(
    f[0].next,
    /gradient carry-over: .*a missing zero_grad, an accumulation window crossing the save/,
  );
});

Deno.test("findRootCauses() cause-grad-carryover: the buffers at N+1 differ, the loss at N+2", () => {
  const states = RESUMES.map((p) => ({
    phase: p,
    verdict: "FAIL" as const,
    available: true,
    differing: ["grad_buffers"],
    differing_tensors: ["head.weight · grad"],
  }));
  const c = RESUMES.map((p) => vs(p, { step: 22, a: 1, b: 1.0001 }));
  const f = findRootCauses(input(c, { states }), KINDS);
  assert.deepEqual(f.map((x) => x.code), ["cause-grad-carryover"]);
  assert.deepEqual(f[0].state, ["grad_buffers"]);
  assert.equal(f[0].step, 22);
  assert.match(
    f[0].title,
    /state check names grad_buffers \(the gradients carried into the first resumed step\) — head\.weight · grad/,
  );
  assert.match(
    f[0].title,
    /The uninterrupted run carried gradients into the next step that a fresh process does not have: its gradient buffers were not empty as step 21 began/,
  );
  assert.match(f[0].next, /zero_grad/);
  assert.match(f[0].next, /accumulation windows from crossing the save/);
  // The losses pass within the window: the state check alone fails, on the same card.
  const quiet = findRootCauses(input(RESUMES.map((p) => vs(p)), { states }), KINDS);
  assert.deepEqual(quiet.map((x) => x.code), ["cause-grad-carryover"]);
  assert.match(quiet[0].title, /the uninterrupted run carried gradients .* step 21 began/);
  assert.match(quiet[0].next, /zero_grad/);
});

Deno.test("findRootCauses() cause-plan-bytes: plans that differ from the reshard the same way share a card", () => {
  const execution = (policy: string, expert: number) => ({
    policy,
    phase: `plan-${policy}`,
    verified: true,
    segments: 4,
    moved_bytes: 1,
    local_bytes: 0,
    max_process_bytes: 1,
    mean_process_bytes: 1,
    execution: {
      phase: `execute-plan-${policy}`,
      against: "resume-ep1",
      verdict: "FAIL" as const,
      compared: 8,
      kinds: ["module"],
      mismatches: [{
        process: 0,
        parameter: "layers.1.experts.w2",
        kind: "module",
        expert,
        slot: 0,
        region: `[${expert}:${expert + 1}, 0:4]`,
        detail: "bytes differ",
      }],
      mismatch_count: 1,
      reason: "1 of 8 expert slots differ",
    },
  });
  const run = {
    ...input([]),
    plan_sync: [execution("first_holder", 0), execution("highest_holder", 0), execution("x", 3)],
  };
  const found = findRootCauses(run, KINDS);
  assert.deepEqual(found.map((f) => f.code), ["cause-plan-bytes", "cause-plan-bytes"]);
  assert.match(found[0].title, /plans of first_holder, highest_holder, executed on the checkpoint/);
  assert.match(found[0].headline ?? "", /layers\.1\.experts\.w2 · expert 0 · module · process 0/);
  assert.match(found[1].headline ?? "", /expert 3/);
  assert.equal(findRootCauses({ ...input([]), plan_sync: [] }, KINDS).length, 0);
});

Deno.test("findRootCauses() cause-state-only: losses pass, restored state differs — a card of its own", () => {
  const checks = (differing: Record<string, string[]>): StateCheckSummary[] =>
    RESUMES.map((p) => ({
      phase: p,
      verdict: differing[p] ? "FAIL" : "PASS",
      available: true,
      differing: differing[p] ?? [],
    }));
  const moments = ["exp_avg", "exp_avg_sq"];
  const states = checks({ "resume-reshard": moments, "resume-plan-balanced": moments });
  const f = findRootCauses(input(RESUMES.map((p) => vs(p)), { states }), KINDS);
  assert.equal(f.length, 1, "resumes naming the same components share one card");
  assert.equal(f[0].code, "cause-state-only");
  assert.equal(f[0].verdict, "FAIL");
  assert.deepEqual(f[0].phases, ["resume-reshard", "resume-plan-balanced"]);
  assert.deepEqual(f[0].state, moments);
  assert.match(f[0].title, /losses pass \(drift lane\)/);
  // A resume whose loss fails is the divergence card's; another component is another card.
  const mixed = checks({ "resume-universal": ["rng"], "resume-native": ["param_groups"] });
  const g = findRootCauses(
    input([vs("resume-native"), vs("resume-universal", big)], { states: mixed }),
    KINDS,
  );
  assert.deepEqual(g.map((x) => x.code), ["cause-converter", "cause-state-only"]);
  assert.deepEqual(g[1].phases, ["resume-native"]);
});

Deno.test("findRootCauses() cause-save-differs: the save, not the load, with or without a divergence", () => {
  const save: StateCheckSummary = {
    phase: "split",
    check: "save",
    verdict: "FAIL",
    available: true,
    differing: ["rng"],
  };
  const loads = RESUMES.map((p) => ({ phase: p, verdict: "PASS", available: true, differing: [] }));
  const states = [save, ...loads] as StateCheckSummary[];
  // Every restore equals the save: without the save check this read "consumed before step 21".
  const f = findRootCauses(input(RESUMES.map((p) => vs(p, big)), { states }), KINDS);
  assert.deepEqual(f.map((x) => x.code), ["cause-save-differs"]);
  assert.deepEqual(f[0].state, ["rng"]);
  assert.match(f[0].title, /checkpoint is wrong, not its load.*step 20 in rng/);
  const quiet = findRootCauses(input(RESUMES.map((p) => vs(p)), { states }), KINDS);
  assert.deepEqual(quiet.map((x) => x.code), ["cause-save-differs"]);
  assert.deepEqual(quiet[0].phases, ["split"]);
  assert.match(quiet[0].title, /no loss shows it/);
});

Deno.test("findRootCauses() cause-converter: a universal folder that does not hold the saved state", () => {
  const convert: StateCheckSummary = {
    phase: "convert",
    check: "convert",
    verdict: "FAIL",
    available: true,
    differing: ["params"],
    framework: "deepspeed",
    differing_tensors: ["w · params"],
    differing_tensors_total: 1,
  };
  const loads = RESUMES.map((p) => ({ phase: p, verdict: "PASS", available: true, differing: [] }));
  const f = findRootCauses(
    input(RESUMES.map((p) => vs(p)), { states: [convert, ...loads] as StateCheckSummary[] }),
    KINDS,
  );
  // Its own card, not a restore check's ("the restored state differs").
  assert.deepEqual(f.map((x) => x.code), ["cause-converter"]);
  assert.deepEqual(f[0].phases, ["convert"]);
  assert.match(
    f[0].title,
    /universal folder convert wrote does not hold .*the fp32 master.*w · params/,
  );
});

Deno.test("findRootCauses() cause-divergence: distinct failures get a card each, never one headline", () => {
  // No digests and no readable pattern: two faults at different steps are two findings.
  const noDigests = RESUMES.map((p) => ({
    phase: p,
    verdict: "N/A",
    available: false,
    differing: [],
  }));
  const c = [
    vs("resume-native", { step: 25, a: 1, b: 2 }),
    vs("resume-universal", { step: 30, a: 3, b: 4 }),
    vs("resume-reshard"),
    vs("resume-plan-balanced"),
  ];
  const f = findRootCauses(input(c, { states: noDigests as StateCheckSummary[] }), KINDS);
  assert.deepEqual(f.map((x) => x.code), ["cause-divergence", "cause-divergence"]);
  assert.deepEqual(f.map((x) => x.comparisons), [
    ["baseline~resume-native"],
    ["baseline~resume-universal"],
  ]);
  assert.equal(f[1].headline, "baseline~resume-universal FAIL, first divergent step 30");
  // Every resume failing at N+1 with different values but one at N+2: no "every resume fails
  // at the first resumed step" claim, and the card's headline counts the others.
  const mixed = [
    vs("resume-native", big),
    vs("resume-universal", big),
    vs("resume-reshard", { step: 22, a: 1, b: 2 }),
    vs("resume-plan-balanced", big),
  ];
  const g = findRootCauses(input(mixed, { states: noDigests as StateCheckSummary[] }), KINDS);
  assert.ok(g.every((x) => x.code !== "cause-consumed-before-first-step"), g[0].code);
});

Deno.test("findRootCauses(): a card covering distinct failures names or counts them all", () => {
  // One rule (the save) explains failures with different values: one card, every one named.
  const save = {
    phase: "split",
    check: "save",
    verdict: "FAIL",
    available: true,
    differing: ["rng"],
  };
  const loads = RESUMES.map((p) => ({ phase: p, verdict: "PASS", available: true, differing: [] }));
  const c = [
    vs("resume-native", big),
    vs("resume-universal", big),
    vs("resume-reshard", { step: 21, a: 1, b: 2 }),
    vs("resume-plan-balanced", { step: 21, a: 3, b: 4 }),
  ];
  const f = findRootCauses(
    input(c, { states: [save, ...loads] as StateCheckSummary[] }),
    KINDS,
  );
  assert.deepEqual(f.map((x) => x.code), ["cause-save-differs"]);
  assert.equal(
    f[0].headline,
    "baseline~resume-native FAIL, first divergent step 21 (+1 identical; +2 failing differently: " +
      "baseline~resume-reshard, baseline~resume-plan-balanced)",
  );
  // The save card names the split as the saver, and the resumes as what loads it.
  assert.match(f[0].title, /what split saved differs .*; every resume loads it as saved/);
  assert.doesNotMatch(f[0].title, /resume diverges from it/);
});

Deno.test("findRootCauses() an identical divergence of a native and a universal resume is one card, not the converter's", () => {
  // Measured on an H200 (docs/deepspeed.md): CPU-Adam's beta powers move the native and the
  // universal resume identically; only the universal's restore check names param_groups, and a
  // primed native resume passes.
  const kinds = { ...KINDS, "resume-native-primed": "native" };
  const same = { step: 12, a: 6.968037486076355, b: 6.968005061149597 };
  const resumes = ["resume-native", "resume-universal", "resume-native-primed"];
  const f = findRootCauses(
    input([vs("resume-native", same), vs("resume-universal", same), vs("resume-native-primed")], {
      states: resumes.map((p) => ({
        phase: p,
        verdict: p === "resume-universal" ? "FAIL" : "PASS",
        available: true,
        differing: p === "resume-universal" ? ["param_groups"] : [],
      })),
      phases: [phase("baseline", "baseline"), ...resumes.map((p) => phase(p, "resume"))],
    }),
    kinds,
  );
  assert.deepEqual(f.map((x) => x.code), ["cause-divergence"]);
  assert.deepEqual(f[0].comparisons, ["baseline~resume-native", "baseline~resume-universal"]);
});

Deno.test("findRootCauses() cause-save-perturbs: a fused save that moved the run has its own card", () => {
  // save-perturbs-rng under schedule.split: fused: the checkpoint and the baseline took the same
  // draw, so every resume matches; only the checks at the save can tell.
  const states: StateCheckSummary[] = [
    { phase: "baseline", check: "perturb", verdict: "FAIL", available: true, differing: ["rng"] },
    { phase: "baseline", check: "save", verdict: "FAIL", available: true, differing: ["rng"] },
    ...RESUMES.map((p) => ({ phase: p, verdict: "PASS" as const, available: true, differing: [] })),
  ];
  const findings = findRootCauses(input(RESUMES.map((r) => vs(r)), { states }), {});
  const card = findings.find((f) => f.code === "cause-save-perturbs");
  assert.ok(card, findings.map((f) => f.code).join(", "));
  assert.deepEqual(card.state, ["rng"]);
  assert.match(card.title, /Saving at step 20 changed the state baseline trains on/);
  // The perturbation check is no restore check: no resume is blamed for it.
  assert.ok(!findings.some((f) => f.code === "cause-state-only"));
  assert.ok(findings.some((f) => f.code === "cause-save-differs"));
});

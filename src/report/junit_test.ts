import assert from "node:assert/strict";
import type { RunSummary } from "../types/summary.ts";
import { makeFixtureRun } from "../../test/_testing/run_fixture.ts";
import { validateJunit, type XmlElement } from "./_testing.ts";
import { renderJunit, xmlAttr, xmlText } from "./junit.ts";
import { loadRun } from "./load_run.ts";

async function fixtureSummaries(): Promise<{ fail: RunSummary; pass: RunSummary; tmp: string }> {
  const tmp = await Deno.makeTempDir({ prefix: "parity_junit_" });
  const fail = (await makeFixtureRun(tmp, { verdict: "FAIL" })).summary;
  const pass =
    (await makeFixtureRun(tmp, { verdict: "PASS", experiment: "nightly-pass", runId: "r2" }))
      .summary;
  return { fail, pass, tmp };
}

function cases(root: XmlElement, suite: string): XmlElement[] {
  return root.children.find((s) => s.attrs.name === suite)!.children.filter((c) =>
    c.name === "testcase"
  );
}

/** A test case's `<properties>` as a name → value record. */
function properties(tc: XmlElement): Record<string, string> {
  const block = tc.children.find((c) => c.name === "properties");
  return Object.fromEntries(
    (block?.children ?? []).map((p) => [p.attrs.name, p.attrs.value]),
  );
}

Deno.test("renderJunit() output passes the JUnit shape check with consistent counts", async () => {
  const { fail, pass, tmp } = await fixtureSummaries();
  try {
    const { problems, root, suites } = validateJunit(
      renderJunit([{ summary: fail }, { summary: pass }]),
    );
    assert.deepEqual(problems, []);
    const expectedTests = (s: RunSummary) =>
      s.comparisons.length + s.state_checks.length + s.plan_sync.length + s.phases.length;
    assert.deepEqual(suites, [
      // FAIL: resume-universal comparison + its state check; ERROR: resume-plan comparison + phase;
      // skipped: the N/A state check of resume-plan.
      { name: "quickstart", tests: expectedTests(fail), failures: 2, errors: 2, skipped: 1 },
      { name: "nightly-pass", tests: expectedTests(pass), failures: 0, errors: 0, skipped: 1 },
    ]);
    assert.equal(root!.attrs.tests, String(expectedTests(fail) + expectedTests(pass)));
    const classes = new Set(cases(root!, "quickstart").map((c) => c.attrs.classname));
    assert.deepEqual(
      classes,
      new Set([
        "quickstart.comparisons",
        "quickstart.state",
        "quickstart.plan",
        "quickstart.phases",
      ]),
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderJunit() failure names the first divergent step and both values", async () => {
  const { fail, tmp } = await fixtureSummaries();
  try {
    const { root } = validateJunit(renderJunit([{ summary: fail }]));
    const tc = cases(root!, "quickstart").find((c) =>
      c.attrs.name === "baseline~resume-universal"
    )!;
    const failure = tc.children.find((c) => c.name === "failure")!;
    assert.equal(failure.name, "failure");
    const d = fail.comparisons[1].divergence!;
    assert.equal(
      failure.attrs.message,
      `first divergent step 21: baseline=${d.a} resume-universal=${d.b}`,
    );
    assert.match(
      failure.text,
      new RegExp(
        `first divergent step: 21\\nbaseline \\(a\\) = ${d.a}\\nresume-universal \\(b\\) = ${d.b}`,
      ),
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderJunit() turns a failed phase into <error> with its log tail", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_junit_" });
  try {
    const { runDir } = await makeFixtureRun(tmp, { verdict: "FAIL" });
    const run = await loadRun(runDir);
    const { problems, root } = validateJunit(renderJunit([run]));
    assert.deepEqual(problems, []);
    const tc = cases(root!, "quickstart").find((c) =>
      c.attrs.classname === "quickstart.phases" && c.attrs.name === "resume-plan"
    )!;
    const error = tc.children.find((c) => c.name === "error")!;
    assert.equal(error.attrs.type, "PhaseFailed");
    assert.equal(error.attrs.message, "resume-plan: exited with code 1");
    assert.equal(
      error.text,
      "loading plan <plan.json> & shards\nTraceback: KeyError: 'layers.0.experts.w1'\nfatal: missing segment",
    );
    const cached = cases(root!, "quickstart").find((c) => c.attrs.name === "split")!;
    assert.deepEqual(properties(cached).cached, "true");
    const baseline = cases(root!, "quickstart").find((c) => c.attrs.name === "baseline")!;
    assert.equal(baseline.attrs.time, "9.800");
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderJunit() maps ABSTAIN to <skipped> and escapes control characters and markup", async () => {
  const { fail, tmp } = await fixtureSummaries();
  try {
    const summary: RunSummary = structuredClone(fail);
    summary.experiment = 'exp"<&>\u0007';
    summary.comparisons[0] = {
      ...summary.comparisons[0],
      verdict: "ABSTAIN",
      reason: "noise floor\u0000 > 0",
    };
    summary.phases.at(-1)!.log_tail = "\u001b[31mred\u001b[0m \uFFFE ]]> </error>";
    const xml = renderJunit([{ summary }]);
    const { problems, root } = validateJunit(xml);
    assert.deepEqual(problems, []);
    const suite = root!.children[0];
    assert.equal(suite.attrs.name, 'exp"<&>\\u0007');
    const skipped = suite.children.find((c) => c.name === "testcase")!.children
      .find((c) => c.name === "skipped")!;
    assert.equal(skipped.attrs.message, "noise floor\\u0000 > 0");
    const error = suite.children.filter((c) => c.name === "testcase").at(-1)!.children
      .find((c) => c.name === "error")!;
    assert.equal(error.text, "red \\ufffe ]]> </error>");
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderJunit() names stay the same when phases come from the cache; facts are properties", async () => {
  const { fail, tmp } = await fixtureSummaries();
  try {
    const names = (summary: RunSummary) =>
      cases(validateJunit(renderJunit([{ summary }])).root!, "quickstart").map((c) =>
        `${c.attrs.classname}/${c.attrs.name}`
      );
    const fresh = structuredClone(fail);
    for (const p of fresh.phases) p.cached = false;
    const cachedRun = structuredClone(fail);
    for (const p of cachedRun.phases) p.cached = true;
    assert.deepEqual(names(cachedRun), names(fresh));
    assert.ok(names(fresh).every((n) => !/cached|\(loss/.test(n)), names(fresh).join(" "));
    const { root } = validateJunit(renderJunit([{ summary: fail }]));
    const diverged = cases(root!, "quickstart").find((c) =>
      c.attrs.name === "baseline~resume-universal"
    )!;
    assert.equal(diverged.children[0].name, "properties", "properties first");
    const props = properties(diverged);
    assert.equal(props.first_divergent_step, "21");
    assert.equal(props.lane, "exact");
    assert.equal(props.culprit, "resume-universal");
    assert.equal(props.state_components, "rng, sampler");
    assert.match(props.max_ulp, /^\d+$/, "a number a CI reporter can read");
    assert.match(props.max_ulp_unit, /^f(32|64)$/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("xmlText() and xmlAttr() keep text intact through a parse", () => {
  assert.equal(xmlText("a<b>&c\u0001"), "a&lt;b&gt;&amp;c\\u0001");
  assert.equal(xmlAttr("q\"'\n\t"), "q&quot;&apos;&#10;&#9;");
  assert.equal(xmlText("emoji 😀 stays"), "emoji 😀 stays");
  assert.equal(xmlText("lone \uD800 surrogate"), "lone \\ud800 surrogate");
});

Deno.test("renderJunit() reports a plan executed on the bytes and names the broken tensor", async () => {
  const { fail, tmp } = await fixtureSummaries();
  try {
    const plan = fail.plan_sync[0];
    plan.planner = { name: "deepspeed.checkpoint.affine_transfer", version: "0.19.8", api: "x" };
    plan.second_opinion = {
      planner: "parity 0.1.0",
      available: true,
      equal: false,
      parameters: 6,
      differing_parameters: 1,
      first_difference: "w2: segment 0",
    };
    plan.execution = {
      phase: "execute-plan-first_holder",
      against: "resume-ep1",
      verdict: "FAIL",
      compared: 96,
      kinds: ["module"],
      mismatches: [{
        process: 1,
        parameter: "layers.1.experts.w2",
        kind: "exp_avg",
        expert: 2,
        slot: 0,
        region: "[2:3, 0:32, 0:32]",
        detail: "bytes differ",
      }],
      mismatch_count: 1,
      reason: "1 of 96 expert slots differ",
    };
    const { problems, root } = validateJunit(renderJunit([{ summary: fail }]));
    assert.deepEqual(problems, []);
    const planCase = cases(root!, "quickstart").find((c) =>
      c.attrs.classname === "quickstart.plan"
    )!;
    assert.equal(properties(planCase).planner, "deepspeed.checkpoint.affine_transfer 0.19.8 (x)");
    assert.equal(properties(planCase).second_opinion, "differs: w2: segment 0");
    const executed = cases(root!, "quickstart").find((c) =>
      c.attrs.classname === "quickstart.plan_execution"
    )!;
    const failure = executed.children.find((c) => c.name === "failure")!;
    assert.equal(failure.attrs.type, "PlanExecutionMismatch");
    assert.match(failure.text, /layers\.1\.experts\.w2 · expert 2 · exp_avg · process 1/);
    assert.equal(properties(executed).first_parameter, "layers.1.experts.w2");
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderJunit() names a state check's differing tensors; the save check is `split (save)`", async () => {
  const { fail, tmp } = await fixtureSummaries();
  try {
    const check = fail.state_checks.find((s) => s.verdict === "FAIL")!;
    check.differing_tensors = ["layers.0.experts.w2 · expert 1 · exp_avg"];
    check.differing_tensors_total = 3;
    fail.state_checks.push({
      phase: "split",
      check: "save",
      verdict: "FAIL",
      available: true,
      differing: ["rng"],
      compared: ["rng"],
    });
    const { problems, root } = validateJunit(renderJunit([{ summary: fail }]));
    assert.deepEqual(problems, []);
    const state = cases(root!, "quickstart").filter((c) =>
      c.attrs.classname === "quickstart.state"
    );
    const named = state.find((c) => c.attrs.name === check.phase)!;
    assert.equal(properties(named).differing_tensors, "layers.0.experts.w2 · expert 1 · exp_avg");
    assert.equal(properties(named).differing_tensors_total, "3");
    const save = state.find((c) => c.attrs.name === "split (save)")!;
    const failure = save.children.find((c) => c.name === "failure")!;
    assert.match(failure.attrs.message, /saved state differs from the baseline's.*: rng/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

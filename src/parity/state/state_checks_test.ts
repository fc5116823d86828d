import assert from "node:assert/strict";
import { join } from "node:path";
import { parseJsonl, readJsonl } from "../../metrics/jsonl.ts";
import { TENSORS_ERROR_FIELD } from "../../metrics/tensors_file.ts";
import { jsonl } from "../../../test/_testing/metrics_fixtures.ts";
import {
  checkConvertedFiles,
  checkRestoredState,
  checkSavedState,
  checkSavePerturbation,
  loadedSaveText,
  stateCheckName,
  tensorList,
} from "./state_checks.ts";

const saved = (digests: Record<string, unknown>, step = 20) =>
  parseJsonl(jsonl([{ step: 1, loss: 1 }, { event: "saved", step, digests }]));
const loaded = (digests: Record<string, unknown>, step = 20) =>
  parseJsonl(jsonl([{ event: "loaded", step, digests }, { step: 21, loss: 1 }]));

Deno.test("checkRestoredState() passes equal digests per component", () => {
  const d = { params: "a", rng: { torch: "x", numpy: "y" } };
  const r = checkRestoredState("resume-native", saved(d), loaded(d), 20);
  assert.equal(r.verdict, "PASS");
  assert.deepEqual(r.compared, ["params", "rng"]);
});

Deno.test("checkRestoredState() names differing components and a wrong loaded step", () => {
  const r = checkRestoredState(
    "resume-universal",
    saved({ params: "a", exp_avg_sq: "v", rng: "r" }),
    loaded({ params: "a", exp_avg_sq: "w", rng: "r" }, 19),
    20,
  );
  assert.equal(r.verdict, "FAIL");
  assert.deepEqual(r.differing, ["step", "exp_avg_sq"]);
  assert.match(r.reason ?? "", /loaded step 19, saved step 20/);
});

/** A split that saved after steps 3 and 6 (the #8499 shape). */
const twoSaves = (at3: Record<string, unknown>, at6: Record<string, unknown>) =>
  parseJsonl(jsonl([
    { step: 3, loss: 1 },
    { event: "saved", step: 3, digests: at3 },
    { step: 6, loss: 1 },
    { event: "saved", step: 6, digests: at6 },
  ]));

Deno.test("checkRestoredState() checks a resume against the save of its from_step", () => {
  const at3 = { params: "p3", exp_avg: "m3", rng: "r3" };
  const at6 = { params: "p6", exp_avg: "m6", rng: "r6" };
  const r = checkRestoredState("resume-early", twoSaves(at3, at6), loaded(at3, 3), 3);
  assert.equal(r.verdict, "PASS", r.reason);
  assert.equal(r.loaded_save, undefined);
});

Deno.test("checkRestoredState() names the other save a resume loaded, wholly or in part", () => {
  const at3 = { params: "p3", exp_avg: "m3", rng: "r3" };
  const at6 = { params: "p6", exp_avg: "m6", rng: "r6" };
  // Pointed at the wrong tag: everything, the step included, is step 6's.
  const wrongTag = checkRestoredState("resume-early", twoSaves(at3, at6), loaded(at6, 6), 3);
  assert.equal(wrongTag.verdict, "FAIL");
  assert.deepEqual(wrongTag.loaded_save, {
    step: 6,
    components: ["exp_avg", "params", "rng"],
    all: true,
  });
  assert.match(wrongTag.reason ?? "", /It loaded the state saved at step 6, not step 3's\.$/);
  // DeepSpeed #8499: the weights of `latest` (step 6), fresh moments, step 3's counters.
  const weights = checkRestoredState(
    "resume-early",
    twoSaves(at3, at6),
    loaded({ params: "p6", exp_avg: "fresh", rng: "r3" }, 3),
    3,
  );
  assert.deepEqual(weights.differing, ["exp_avg", "params"]);
  assert.deepEqual(weights.loaded_save, { step: 6, components: ["params"], all: false });
  assert.equal(
    loadedSaveText({ ...weights, from_step: 3 }),
    "loaded the params saved at step 6, not step 3's",
  );
  // Differing from every save: no other save is named.
  const fresh = checkRestoredState(
    "resume-early",
    twoSaves(at3, at6),
    loaded({ params: "p3", exp_avg: "fresh", rng: "r3" }, 3),
    3,
  );
  assert.equal(fresh.verdict, "FAIL");
  assert.equal(fresh.loaded_save, undefined);
  assert.equal(loadedSaveText(fresh), "");
});

Deno.test("checkRestoredState() is ERROR for a component only one side has", () => {
  const r = checkRestoredState("r", saved({ params: "a", rng: "r" }), loaded({ params: "a" }));
  assert.equal(r.verdict, "ERROR");
  assert.deepEqual(r.missing, ["rng"]);
});

Deno.test("checkRestoredState() is N/A, not PASS, without digests", () => {
  const none = parseJsonl(jsonl([{ event: "saved", step: 20 }, { step: 1, loss: 1 }]));
  const r = checkRestoredState("r", none, loaded({ params: "a" }));
  assert.deepEqual([r.verdict, r.available], ["N/A", false]);
  assert.match(r.reason ?? "", /split's saved event does not carry/);
  assert.equal(checkRestoredState("r", undefined, undefined).verdict, "N/A");
});

const snapshot = (digests: Record<string, unknown>, step = 20) =>
  parseJsonl(jsonl([{ step: 20, loss: 1 }, { event: "snapshot", step, digests }]));

Deno.test("checkSavedState() judges the saved digests against the baseline's snapshot", () => {
  const d = { params: "a", rng: "r", sampler: "s" };
  const ok = checkSavedState("split", snapshot(d), saved(d), 20);
  assert.equal(ok.verdict, "PASS");
  assert.equal(ok.check, "save");
  assert.equal(stateCheckName(ok), "split (save)");
  const early = checkSavedState("split", snapshot(d), saved({ ...d, sampler: "s-1" }), 20);
  assert.equal(early.verdict, "FAIL");
  assert.deepEqual(early.differing, ["sampler"]);
  assert.match(early.reason ?? "", /uninterrupted run's state at step 20 in sampler/);
  // Snapshot at another step than the save: the step itself differs.
  assert.deepEqual(checkSavedState("split", snapshot(d, 19), saved(d), 20).differing, ["step"]);
  const none = checkSavedState("split", undefined, saved(d), 20);
  assert.equal(none.verdict, "N/A");
  assert.match(none.reason ?? "", /baseline's snapshot event does not carry/);
});

Deno.test("checkRestoredState() names the differing tensors when both sides carry them", () => {
  const d = { exp_avg: "m", params: "p" };
  const t = {
    "layers.0.experts.w2 · expert 1 · exp_avg": "a",
    "layers.0.experts.w2 · expert 2 · exp_avg": "b",
    "head.weight · params": "c",
  };
  const withTensors = (digests: Record<string, unknown>, tensors: Record<string, string>) =>
    parseJsonl(jsonl([{ step: 1, loss: 1 }, { event: "saved", step: 20, digests, tensors }]));
  const resumed = parseJsonl(jsonl([
    {
      event: "loaded",
      step: 20,
      digests: { ...d, exp_avg: "m2" },
      tensors: { ...t, "layers.0.experts.w2 · expert 2 · exp_avg": "b2" },
    },
  ]));
  const r = checkRestoredState("resume-reshard", withTensors(d, t), resumed, 20);
  assert.deepEqual(r.differing, ["exp_avg"]);
  assert.deepEqual(r.differing_tensors, ["layers.0.experts.w2 · expert 2 · exp_avg"]);
  assert.equal(r.differing_tensors_total, 1);
  assert.equal(tensorList([r]), "layers.0.experts.w2 · expert 2 · exp_avg");
  // Without tensors on one side, only components are named.
  assert.equal(checkRestoredState("x", saved(d), resumed, 20).differing_tensors, undefined);
});

Deno.test("a check whose event names an unusable tensors_file is ERROR, never PASS", () => {
  const d = { params: "a" };
  const bad = parseJsonl(jsonl([{ event: "loaded", step: 20, digests: d }]));
  bad.events[0].fields[TENSORS_ERROR_FIELD] = "tensors_file /x/t.json does not exist";
  const r = checkRestoredState("resume-native", saved(d), bad, 20);
  assert.equal(r.verdict, "ERROR");
  assert.match(
    r.reason ?? "",
    /cannot be verified \(this phase's loaded event: tensors_file \/x\/t\.json does not exist\)/,
  );
  // A component that differs still FAILs, and the reason says the tensors went unchecked.
  const failed = checkRestoredState("resume-native", saved({ params: "b" }), bad, 20);
  assert.equal(failed.verdict, "FAIL");
  assert.match(failed.reason ?? "", /in params\. Also the per-tensor digests cannot be verified/);
});

Deno.test("a tensors_file sidecar names the differing tensors like an inline map", async () => {
  const dir = await Deno.makeTempDir({ prefix: "state_checks_test_" });
  try {
    const write = async (name: string, event: string, tensors: Record<string, string>) => {
      await Deno.writeTextFile(join(dir, `tensors-${name}.json`), JSON.stringify(tensors));
      await Deno.writeTextFile(
        join(dir, `${name}.jsonl`),
        jsonl([{
          event,
          step: 20,
          digests: { exp_avg: name },
          tensors_file: `tensors-${name}.json`,
        }]),
      );
      return await readJsonl(join(dir, `${name}.jsonl`));
    };
    const w2 = (e: number) => `layers.0.experts.w2 · expert ${e} · exp_avg`;
    const split = await write("saved", "saved", { [w2(0)]: "a", [w2(1)]: "b" });
    const resume = await write("loaded", "loaded", { [w2(0)]: "a", [w2(1)]: "c" });
    const r = checkRestoredState("resume-reshard", split, resume, 20);
    assert.equal(r.verdict, "FAIL");
    assert.deepEqual(r.differing_tensors, [w2(1)]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A split that saved `digests` and read its files back as `files` (DeepSpeed's events). */
const splitWithFiles = (
  digests: Record<string, string>,
  files: Record<string, unknown>,
  tensors?: { saved: Record<string, string>; files: Record<string, string> },
) =>
  parseJsonl(jsonl([
    { step: 5, loss: 1 },
    {
      event: "saved",
      step: 5,
      digests,
      framework: "deepspeed",
      ...(tensors ? { tensors: tensors.saved } : {}),
    },
    { event: "files", step: 5, ...files, ...(tensors ? { tensors: tensors.files } : {}) },
  ]));

Deno.test("checkSavedState() FAILs a save whose files lack what the engine held", () => {
  // DeepSpeed 0.18.4, bf16 + ZeRO-0 (PR #7786): the engine's digests equal the baseline's, the
  // files hold no optimizer state at all.
  const engine = { params: "p", exp_avg: "m", module_weights: "w", rng: "r" };
  const split = splitWithFiles(engine, {
    digests: { module_weights: "w", rng: "r" },
    absent: ["params", "exp_avg", "optimizer_step"],
  });
  const r = checkSavedState("split", snapshot(engine, 5), split, 5);
  assert.equal(r.verdict, "FAIL");
  assert.equal(r.check, "save");
  assert.deepEqual(r.not_in_files, ["exp_avg", "params"]);
  assert.deepEqual(r.differing, ["exp_avg", "params"]);
  assert.deepEqual(r.files_compared, ["module_weights", "rng"]);
  assert.equal(r.framework, "deepspeed");
  assert.match(r.reason ?? "", /Files vs engine: not in the checkpoint files: exp_avg, params\./);
});

Deno.test("checkSavedState() names the tensor a file holds differently from the engine", () => {
  const engine = { params: "p", rng: "r" };
  const split = splitWithFiles(engine, { digests: { params: "q", rng: "r" }, absent: [] }, {
    saved: { "a · params": "1", "b · params": "2" },
    files: { "a · params": "1", "b · params": "3" },
  });
  // No baseline snapshot: the files alone make the save check.
  const r = checkSavedState("split", undefined, split, 5);
  assert.equal(r.verdict, "FAIL");
  assert.deepEqual(r.files_differing, ["params"]);
  assert.deepEqual(r.differing_tensors, ["b · params"]);
  assert.match(
    r.reason ?? "",
    /files differ from the engine's saved state in params \(b · params\)/,
  );
});

Deno.test("checkSavedState() PASSes files that hold the engine's state, comparing what was read", () => {
  const engine = { params: "p", engine_counters: "c", rng: "r" };
  const split = splitWithFiles(engine, {
    digests: { params: "p", rng: "r" },
    absent: [],
    not_read: ["engine_counters"],
  });
  const r = checkSavedState("split", snapshot(engine, 5), split, 5);
  assert.equal(r.verdict, "PASS", r.reason);
  assert.deepEqual(r.files_compared, ["params", "rng"]);
  assert.equal(r.not_in_files, undefined);
});

Deno.test("checkSavedState() names what the files cannot give, never as equal", () => {
  const engine = { params: "p", engine_counters: "c", module_weights: "w" };
  const split = splitWithFiles(engine, {
    digests: { params: "p" },
    absent: [],
    not_read: {
      engine_counters: "DeepSpeed does not save the accumulation-window position",
      module_weights: "ZeRO-3 saves no module weights",
    },
  });
  const r = checkSavedState("split", undefined, split, 5);
  assert.equal(r.verdict, "PASS", r.reason);
  assert.deepEqual(r.files_compared, ["params"]);
  assert.deepEqual(r.files_not_checkable, ["engine_counters", "module_weights"]);
  assert.match(r.reason ?? "", /Not checkable from the files: engine_counters: DeepSpeed/);
});

Deno.test("checkConvertedFiles() checks the universal folder against the saved digests", () => {
  const engine = { params: "p", exp_avg: "m", module_weights: "w" };
  const split = splitWithFiles(engine, { digests: engine, absent: [] }, {
    saved: { "a · exp_avg": "1", "b · exp_avg": "2" },
    files: {},
  });
  const good = checkConvertedFiles("convert", split, {
    digests: { params: "p", exp_avg: "m" },
    absent: [],
    not_read: { module_weights: "a universal folder holds no module weights" },
  }, 5);
  assert.equal(good.verdict, "PASS", good.reason);
  assert.equal(good.check, "convert");
  assert.deepEqual(good.files_compared, ["exp_avg", "params"]);
  assert.deepEqual(good.files_not_checkable, ["module_weights"]);
  const bad = checkConvertedFiles("convert", split, {
    digests: { params: "p", exp_avg: "x" },
    tensors: { "a · exp_avg": "1", "b · exp_avg": "9" },
    absent: [],
  }, 5);
  assert.equal(bad.verdict, "FAIL");
  assert.deepEqual(bad.differing, ["exp_avg"]);
  assert.deepEqual(bad.differing_tensors, ["b · exp_avg"]);
  assert.match(
    bad.reason ?? "",
    /The universal folder vs the split's saved state: the universal folder differs from the saved state in exp_avg/,
  );
  assert.equal(stateCheckName(bad), "convert (universal folder)");
  // Without the split's digests there is nothing to check against.
  assert.equal(checkConvertedFiles("convert", undefined, { digests: {} }, 5).verdict, "N/A");
});

Deno.test("checkSavePerturbation() compares a fused baseline's state before and after its save", () => {
  const fused = (after: Record<string, unknown>) =>
    parseJsonl(jsonl([
      { step: 20, loss: 1 },
      { event: "snapshot", step: 20, digests: { params: "p", rng: "r0", sampler: "s" } },
      { event: "saved", step: 20, digests: { params: "p", rng: "r0", sampler: "s" } },
      { event: "after_save", step: 20, digests: after },
      { step: 21, loss: 1 },
    ]));
  const clean = checkSavePerturbation(
    "baseline",
    fused({ params: "p", rng: "r0", sampler: "s" }),
    20,
  );
  assert.equal(clean.verdict, "PASS");
  assert.equal(clean.check, "perturb");
  const drew = checkSavePerturbation(
    "baseline",
    fused({ params: "p", rng: "r1", sampler: "s" }),
    20,
  );
  assert.equal(drew.verdict, "FAIL");
  assert.deepEqual(drew.differing, ["rng"]);
  assert.match(drew.reason ?? "", /the save changed the state the run continues with at step 20/);
  assert.equal(stateCheckName(drew), "baseline (save perturbs)");
  // No after_save (a trainer without the fused contract): not checked, never a pass.
  const none = parseJsonl(jsonl([{ event: "snapshot", step: 20, digests: { params: "p" } }]));
  assert.equal(checkSavePerturbation("baseline", none, 20).verdict, "N/A");
});

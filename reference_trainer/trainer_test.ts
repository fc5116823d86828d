import assert from "node:assert/strict";
import {
  digestDiff,
  firstDiff,
  join,
  type Metrics,
  QUICKSTART,
  readMetrics,
  runInProcess,
} from "../test/_testing/reference_trainer.ts";

// Shared fixture: a quickstart-shaped baseline, a split at N and its conversion, built once.
const STEPS = 40;
const N = 20;
const root = await Deno.makeTempDir({ prefix: "reference_trainer_test_" });
Deno.test.afterAll(() => Deno.remove(root, { recursive: true }));

let counter = 0;
async function train(extra: string[], topology: readonly string[] = QUICKSTART): Promise<Metrics> {
  const file = join(root, `m${counter++}.jsonl`);
  const r = await runInProcess([
    "train",
    ...topology,
    "--steps",
    String(STEPS),
    "--metrics-file",
    file,
    ...extra,
  ]);
  assert.equal(r.code, 0, r.stderr.join("\n"));
  return readMetrics(file);
}

async function convert(input: string, output: string, fault?: string) {
  return await runInProcess([
    "convert",
    "--input_folder",
    input,
    "--output_folder",
    output,
    ...(fault ? ["--fault", fault] : []),
  ]);
}

const baseline = await train([]);
const splitDir = join(root, "split");
const split = await train([
  "--stop-at",
  String(N),
  "--save-at",
  String(N),
  "--checkpoint-dir",
  splitDir,
]);
const tag = join(splitDir, `global_step${N}`);
const universal = join(splitDir, `global_step${N}_universal`);
assert.equal((await convert(tag, universal)).code, 0);
const saved = split.events.get("saved")!.digests!;

Deno.test("train: the same command gives identical records and the loss falls", async () => {
  const again = await train([]);
  assert.deepEqual([...again.steps.values()], [...baseline.steps.values()]);
  const first = baseline.steps.get(1)!.loss, last = baseline.steps.get(STEPS)!.loss;
  assert.ok(last < 0.5 * first, `loss ${first} -> ${last}`);
  for (const r of baseline.steps.values()) {
    assert.ok(Number.isFinite(r.loss) && r.lr > 0 && r.grad_norm > 0);
  }
  assert.equal(baseline.events.get("config")!.world_size, 4);
});

Deno.test("train: the split run matches the baseline and its saved event is on a boundary", () => {
  assert.equal(firstDiff(baseline, split), null);
  assert.deepEqual([...split.steps.keys()], [...Array(N).keys()].map((i) => i + 1));
  const ev = split.events.get("saved")!;
  assert.equal(ev.step, N);
  assert.equal(ev.grad_accum, 2);
  assert.equal(ev.micro_step, N * 2);
  assert.deepEqual(Object.keys(ev.digests!).sort(), [
    "engine_counters",
    "exp_avg",
    "exp_avg_sq",
    "lr_scheduler",
    "module_params",
    "optimizer_step",
    "param_groups",
    "params",
    "rng",
    "sampler",
  ]);
  assert.equal(Deno.readTextFileSync(join(splitDir, "latest")), `global_step${N}`);
  assert.equal(
    Deno.readTextFileSync(join(splitDir, "latest_universal")),
    `global_step${N}_universal`,
  );
});

Deno.test("train: --digest-at reports the saved state without perturbing the run", async () => {
  const observed = await train(["--digest-at", String(N)]);
  assert.deepEqual([...observed.steps.values()], [...baseline.steps.values()], "no step moved");
  const snapshot = observed.events.get("snapshot")!;
  assert.equal(snapshot.step, N);
  assert.deepEqual(snapshot.digests, saved, "the uninterrupted run holds what the split saved");
  // A save that draws from the RNG before capturing it no longer matches the snapshot.
  const perturbed = await train([
    "--stop-at",
    String(N),
    "--save-at",
    String(N),
    "--checkpoint-dir",
    join(root, "split-perturbed"),
    "--fault",
    "save-perturbs-rng",
  ]);
  const wrong = perturbed.events.get("saved")!.digests!;
  assert.deepEqual(
    Object.keys(wrong).filter((k) => wrong[k] !== snapshot.digests![k]),
    ["rng"],
  );
  // The gradient buffers as step N+1 begins: empty, as a resumed process's are.
  const grads = observed.events.get("grads")!;
  assert.equal(grads.step, N + 1);
  const resumed = await train(["--resume-from", tag, "--resume-kind", "native"]);
  assert.equal(resumed.events.get("grads")!.step, N + 1);
  assert.deepEqual(resumed.events.get("grads")!.digests, grads.digests);
});

Deno.test("train: fault carry-grads is in every process; only the gradient buffers at N+1 tell", async () => {
  const withFault = ["--fault", "carry-grads"];
  const base = await train([...withFault, "--digest-at", String(N)]);
  // Step 1 starts from empty buffers; step 2's update adds step 1's gradient, so the loss at 3.
  assert.equal(firstDiff(baseline, base), 3, "the loop bug is the uninterrupted run's too");
  const dir = join(root, "fault-carry-grads");
  const s = await train([
    ...withFault,
    "--stop-at",
    String(N),
    "--save-at",
    String(N),
    "--checkpoint-dir",
    dir,
  ]);
  assert.deepEqual(s.events.get("saved")!.digests, base.events.get("snapshot")!.digests);
  const nat = await train([...withFault, "--resume-from", join(dir, `global_step${N}`)]);
  assert.equal(firstDiff(base, nat), N + 2, "the first resumed update lacks the carried gradients");
  assert.deepEqual(
    digestDiff(s.events.get("saved")!.digests!, nat.events.get("loaded")!.digests!),
    [],
  );
  const [want, got] = [base, nat].map((m) => m.events.get("grads")!);
  assert.deepEqual([want.step, got.step], [N + 1, N + 1]);
  assert.deepEqual(digestDiff(want.digests!, got.digests!), ["grad_buffers"]);
});

Deno.test("train: native resume is bit-identical from step N+1 and restores the saved digests", async () => {
  const m = await train(["--resume-from", tag, "--resume-kind", "native"]);
  assert.equal(Math.min(...m.steps.keys()), N + 1);
  assert.equal(m.steps.size, STEPS - N);
  assert.equal(firstDiff(baseline, m), null);
  assert.equal(firstDiff(baseline, m, "lr"), null);
  assert.deepEqual(m.events.get("loaded")!.digests, saved);
  assert.equal(m.events.get("loaded")!.step, N);
});

Deno.test("train: universal resume on the same topology is bit-identical", async () => {
  const m = await train(["--resume-from", universal, "--resume-kind", "universal"]);
  assert.equal(firstDiff(baseline, m), null);
  assert.deepEqual(m.events.get("loaded")!.digests, saved);
});

Deno.test("train: a checkpoint root resumes through latest / latest_universal", async () => {
  const m = await train(["--resume-from", splitDir]);
  assert.equal(m.events.get("loaded")!.kind, "native");
  assert.equal(firstDiff(baseline, m), null);
  const u = await train(["--resume-from", splitDir, "--resume-kind", "universal"]);
  assert.equal(u.events.get("loaded")!.kind, "universal");
});

Deno.test("train: universal reshards onto other world sizes, EP sizes, placements and stages", async () => {
  const targets: string[][] = [
    ["--world-size", "2", "--ep-size", "1", "--zero-stage", "3"],
    ["--world-size", "2", "--ep-size", "2", "--placement", "[[0,2],[1,2,3]]", "--zero-stage", "1"],
    ["--world-size", "8", "--ep-size", "4", "--placement", "[[0],[1,2],[3,0],[]]"],
    ["--world-size", "2", "--ep-size", "2", "--placement", "[[0,3],[1,2,3]]", "--zero-stage", "2"],
  ];
  for (const t of targets) {
    const m = await train(
      ["--resume-from", universal, "--resume-kind", "universal"],
      [...t, "--precision", "bf16", "--grad-accum", "2", "--quiet"],
    );
    assert.deepEqual(m.events.get("loaded")!.digests, saved, t.join(" "));
    assert.equal(m.steps.size, STEPS - N);
    for (const [step, r] of m.steps) {
      const b = baseline.steps.get(step)!;
      const rel = Math.abs(r.loss - b.loss) / Math.abs(b.loss);
      assert.ok(rel <= 1e-4, `${t.join(" ")}: step ${step} rel ${rel}`);
    }
  }
});

Deno.test("train: ZeRO-3 fp32 checkpoints resume natively and through universal", async () => {
  const topo = ["--world-size", "2", "--ep-size", "2", "--zero-stage", "3", "--quiet"];
  const base = await train([], topo);
  const dir = join(root, "zero3");
  const s = await train(["--stop-at", "5", "--save-at", "5", "--checkpoint-dir", dir], topo);
  const names = [...Deno.readDirSync(join(dir, "global_step5"))].map((e) => e.name).sort();
  assert.ok(names.includes("zero_pp_rank_1_mp_rank_00_model_states.safetensors"), names.join());
  assert.ok(!names.includes("mp_rank_00_model_states.safetensors"));
  const nat = await train(["--resume-from", join(dir, "global_step5")], topo);
  assert.equal(firstDiff(base, nat), null);
  assert.deepEqual(nat.events.get("loaded")!.digests, s.events.get("saved")!.digests);
  assert.equal((await convert(join(dir, "global_step5"), join(dir, "u"))).code, 0);
  const uni = await train(["--resume-from", join(dir, "u")], topo);
  assert.equal(firstDiff(base, uni), null);
});

/** The fault table of docs/reference-trainer.md, for a save at N. */
const FAULT_TABLE: {
  fault: string;
  native: number | null | "refused";
  universal: number | null | "refused";
  lr?: number;
  digests: { native: string[]; universal: string[] };
}[] = [
  {
    fault: "skip-rng-restore",
    native: N + 1,
    universal: N + 1,
    digests: { native: ["rng"], universal: ["rng"] },
  },
  {
    fault: "skip-sampler-restore",
    native: N + 1,
    universal: N + 1,
    digests: { native: ["sampler"], universal: ["sampler"] },
  },
  {
    fault: "skip-scheduler-restore",
    native: N + 2,
    universal: N + 2,
    lr: N + 1,
    digests: { native: ["lr_scheduler"], universal: ["lr_scheduler"] },
  },
  {
    fault: "reset-adam-step",
    native: N + 2,
    universal: N + 2,
    digests: { native: ["optimizer_step"], universal: ["optimizer_step"] },
  },
  {
    fault: "drop-exp-avg-sq",
    native: null,
    universal: N + 2,
    digests: { native: [], universal: ["exp_avg_sq"] },
  },
  {
    fault: "master-from-bf16",
    native: null,
    universal: N + 2,
    digests: { native: [], universal: ["params"] },
  },
  {
    fault: "mid-accumulation-save",
    native: N + 1,
    universal: N + 1,
    digests: { native: [], universal: [] },
  },
  {
    fault: "converter-transpose",
    native: null,
    universal: N + 1,
    digests: {
      native: [],
      universal: ["exp_avg", "exp_avg_sq", "module_params", "params"],
    },
  },
  {
    fault: "replica-drift",
    native: N + 1,
    universal: "refused",
    digests: { native: ["module_params", "params"], universal: [] },
  },
  {
    fault: "save-perturbs-rng",
    native: N + 1,
    universal: N + 1,
    digests: { native: [], universal: [] },
  },
  {
    fault: "cursor-saved-early",
    native: N + 1,
    universal: N + 1,
    digests: { native: [], universal: [] },
  },
  {
    fault: "param-group-lost",
    native: N + 2,
    universal: N + 2,
    digests: { native: ["param_groups"], universal: ["param_groups"] },
  },
];

for (const row of FAULT_TABLE) {
  Deno.test(`train: fault ${row.fault} first differs where docs/reference-trainer.md says`, async () => {
    const withFault = ["--fault", row.fault];
    const base = await train(withFault);
    assert.equal(firstDiff(baseline, base), null, "a fault must leave the baseline clean");
    const dir = join(root, `fault-${row.fault}`);
    const s = await train([
      ...withFault,
      "--stop-at",
      String(N),
      "--save-at",
      String(N),
      "--checkpoint-dir",
      dir,
    ]);
    const ev = s.events.get("saved")!;
    assert.equal(ev.step, N);
    assert.equal(ev.micro_step, row.fault === "mid-accumulation-save" ? 2 * N + 1 : 2 * N);
    const nat = await train([...withFault, "--resume-from", join(dir, `global_step${N}`)]);
    assert.equal(firstDiff(baseline, nat), row.native, "native loss");
    assert.deepEqual(
      digestDiff(ev.digests!, nat.events.get("loaded")!.digests!),
      row.digests.native,
    );
    assert.equal(firstDiff(baseline, nat, "lr"), row.lr ?? null, "native lr");
    const out = join(dir, "universal");
    const c = await convert(join(dir, `global_step${N}`), out, row.fault);
    if (row.universal === "refused") {
      assert.equal(c.code, 1);
      assert.equal(c.stderr.length, 1);
      assert.match(c.stderr[0], /hold different data/);
      assert.throws(() => Deno.statSync(out), Deno.errors.NotFound);
      return;
    }
    assert.equal(c.code, 0, c.stderr.join("\n"));
    const uni = await train([...withFault, "--resume-from", out, "--resume-kind", "universal"]);
    assert.equal(firstDiff(baseline, uni), row.universal, "universal loss");
    assert.equal(firstDiff(baseline, uni, "lr"), row.lr ?? null, "universal lr");
    assert.deepEqual(
      digestDiff(ev.digests!, uni.events.get("loaded")!.digests!),
      row.digests.universal,
    );
    if (typeof row.universal === "number") {
      for (let k = N + 1; k < row.universal; k++) {
        assert.equal(
          uni.steps.get(k)!.loss,
          baseline.steps.get(k)!.loss,
          `step ${k} before the fault shows`,
        );
      }
    }
  });
}

Deno.test("train: PARITY_* variables are defaults and flags win", async () => {
  const file = join(root, "env.jsonl");
  const r = await runInProcess(["train", "--quiet", "--steps", "3"], {
    PARITY_STEPS: "9",
    PARITY_STOP_AT: "",
    PARITY_SEED: "7",
    PARITY_METRICS_FILE: file,
    PARITY_SAVE_AT: "",
    PARITY_RESUME_FROM: "",
  });
  assert.equal(r.code, 0, r.stderr.join("\n"));
  const m = readMetrics(file);
  assert.deepEqual([...m.steps.keys()], [1, 2, 3]);
  assert.equal(m.events.get("config")!.seed, 7);
});

import assert from "node:assert/strict";
import { REPLICA_POLICY_NAMES } from "../src/affine/policies.ts";
import { readPlanFile } from "../src/affine/plan_file.ts";
import { verifyPlan } from "../src/affine/verify.ts";
import {
  type CliResult,
  join,
  QUICKSTART,
  runInProcess,
  runSubprocess,
} from "../test/_testing/reference_trainer.ts";
import { readNative, readNativeMetadata } from "./checkpoints/checkpoint.ts";
import { epRankProcesses, writeVerifiedPlan } from "./resharding_plan.ts";

/** A target topology: its `train` flags and its `--target` JSON (with extra trainer keys). */
interface Target {
  flags: string[];
  json: Record<string, unknown>;
}

function target(world: number, ep: number, placement: number[][] | null): Target {
  const flags = ["--world-size", String(world), "--ep-size", String(ep)];
  if (placement) flags.push("--placement", JSON.stringify(placement));
  flags.push("--zero-stage", "2", "--precision", "bf16", "--grad-accum", "2", "--quiet");
  const json: Record<string, unknown> = {
    world_size: world,
    ep_size: ep,
    zero_stage: 2,
    precision: "bf16",
    grad_accum: 2, // a trainer argument the harness passes along: ignored
    timeout: 120, // unknown to the trainer: ignored too
  };
  if (placement) {
    json.placement = {
      version: 1,
      num_experts: 4,
      ep_size: ep,
      ranks: placement.map((experts, rank) => ({ rank, experts })),
    };
  }
  return { flags, json };
}

const QUICKSTART_TARGET = target(2, 2, [[0, 3], [1, 2, 3]]);

/** Step lines (byte for byte) and the `loaded` event of a metrics file. */
function metricsOf(path: string) {
  const lines = Deno.readTextFileSync(path).split("\n").filter((l) => l !== "");
  const steps = lines.filter((l) => !l.startsWith(`{"event"`));
  const loaded = lines.map((l) => JSON.parse(l)).find((r) => r.event === "loaded");
  return { steps, loaded };
}

Deno.test("plan path resumes are bit-identical to universal resumes on the same target", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "reference_plan_test_" });
  try {
    const ck = join(root, "ck"), tag = join(ck, "global_step20"), uni = join(root, "u");
    const split = await runInProcess([
      "train",
      ...QUICKSTART,
      "--steps",
      "40",
      "--stop-at",
      "20",
      "--save-at",
      "20",
      "--checkpoint-dir",
      ck,
      "--metrics-file",
      join(root, "split.jsonl"),
    ]);
    assert.equal(split.code, 0, split.stderr.join("\n"));
    const converted = await runInProcess([
      "convert",
      "--input_folder",
      tag,
      "--output_folder",
      uni,
    ]);
    assert.equal(converted.code, 0, converted.stderr.join("\n"));
    const saved = metricsOf(join(root, "split.jsonl"));
    const savedDigests = JSON.parse(
      Deno.readTextFileSync(join(root, "split.jsonl")).split("\n").find((l) =>
        l.includes(`"saved"`)
      )!,
    ).digests;
    assert.equal(saved.steps.length, 20);

    const writeTarget = (name: string, tg: Target) => {
      const file = join(root, `${name}.target.json`);
      Deno.writeTextFileSync(file, JSON.stringify(tg.json));
      return file;
    };
    const universal = async (name: string, tg: Target) => {
      const file = join(root, `${name}.universal.jsonl`);
      const r = await runInProcess([
        "train",
        "--steps",
        "40",
        "--metrics-file",
        file,
        "--resume-from",
        uni,
        ...tg.flags,
      ]);
      assert.equal(r.code, 0, r.stderr.join("\n"));
      return metricsOf(file);
    };
    type Runner = (argv: string[], cwd: string) => Promise<CliResult>;
    const inProcess: Runner = (argv) => runInProcess(argv);
    const viaPlan = async (name: string, tg: Target, policy: string, run: Runner) => {
      const plan = join(root, `${name}.${policy}.plan.json`);
      const p = await run([
        "plan",
        "--source-checkpoint",
        tag,
        "--target",
        writeTarget(name, tg),
        "--policy",
        policy,
        "--out",
        plan,
        "--fault",
        "skip-rng-restore", // the run's fault reaches the planner too; none acts there
      ], root);
      assert.equal(p.code, 0, p.stderr.join("\n"));
      assert.match(p.stderr.join("\n"), new RegExp(`wrote plan .* \\(${policy}: 6 parameters`));
      const file = join(root, `${name}.${policy}.jsonl`);
      const r = await run([
        "train",
        "--steps",
        "40",
        "--stop-at",
        "40",
        "--metrics-file",
        file,
        "--resume-from",
        tag,
        "--resume-kind",
        "plan",
        "--plan",
        plan,
        ...tg.flags,
      ], root);
      assert.equal(r.code, 0, r.stderr.join("\n"));
      return { plan, metrics: metricsOf(file) };
    };
    const assertSame = (
      got: ReturnType<typeof metricsOf>,
      want: ReturnType<typeof metricsOf>,
    ) => {
      assert.equal(got.loaded.kind, "plan");
      assert.equal(got.loaded.step, 20);
      assert.deepEqual(got.loaded.digests, want.loaded.digests);
      assert.deepEqual(got.loaded.digests, savedDigests);
      assert.equal(got.steps.length, 20);
      assert.deepEqual(got.steps, want.steps);
    };

    await t.step("every policy, quickstart target (real subprocesses)", async () => {
      const want = await universal("quickstart", QUICKSTART_TARGET);
      const stats = new Map<string, number>();
      for (const policy of REPLICA_POLICY_NAMES) {
        const { plan, metrics } = await viaPlan(
          "quickstart",
          QUICKSTART_TARGET,
          policy,
          runSubprocess,
        );
        assertSame(metrics, want);
        const file = await readPlanFile(plan);
        assert.equal(file.policy, policy);
        assert.deepEqual(file.source_processes, { "0": 0, "1": 1 });
        assert.deepEqual(file.target_processes, { "0": 0, "1": 1 });
        assert.deepEqual(Object.keys(file.parameters).sort(), [
          "embed.weight",
          "head.weight",
          "layers.0.experts.w1",
          "layers.0.experts.w2",
          "layers.0.experts.w3",
          "layers.0.router.weight",
        ]);
        const verdict = verifyPlan(file, { execute: true });
        assert.ok(verdict.ok, verdict.error ?? "");
        assert.ok(Object.values(file.parameters).every((p) => p.element_size === 4));
        stats.set(policy, verdict.stats!.localBytes);
      }
      // The policies really differ: first_holder ignores locality, local_first does not.
      assert.ok(stats.get("local_first_least_loaded")! > stats.get("first_holder")!);
    });

    await t.step("EP size change (EP 2 -> 1, world 2)", async () => {
      const tg = target(2, 1, null);
      const { metrics } = await viaPlan("ep1", tg, "balanced", inProcess);
      assertSame(metrics, await universal("ep1", tg));
    });

    await t.step("data-parallel size change (world 4 -> 8, EP 2)", async () => {
      const tg = target(8, 2, [[0, 1, 2], [2, 3]]);
      const { metrics } = await viaPlan("dp8", tg, "local_first_least_loaded", inProcess);
      assertSame(metrics, await universal("dp8", tg));
    });

    const resumeWith = (plan: string, tg: Target) =>
      runInProcess([
        "train",
        "--steps",
        "40",
        "--metrics-file",
        join(root, "refused.jsonl"),
        "--resume-from",
        tag,
        "--resume-kind",
        "plan",
        "--plan",
        plan,
        ...tg.flags,
      ]);
    const quickPlan = join(root, "quickstart.balanced.plan.json");

    await t.step("a plan with a dropped segment is refused, naming the segment", async () => {
      const raw = JSON.parse(Deno.readTextFileSync(quickPlan));
      const segments = raw.parameters["layers.0.experts.w2"].segments;
      assert.ok(segments.length >= 2);
      segments.splice(1, 1);
      const tampered = join(root, "tampered.json");
      Deno.writeTextFileSync(tampered, JSON.stringify(raw));
      const r = await resumeWith(tampered, QUICKSTART_TARGET);
      assert.equal(r.code, 1);
      assert.equal(r.stderr.length, 1);
      assert.match(
        r.stderr[0],
        /^trainer train: error: plan .*tampered\.json is refused by the verifier: parameters\.layers\.0\.experts\.w2: target location \d+ addresses \[\d+, \d+\) are written by no segment/,
      );
      assert.ok(!(await exists(join(root, "refused.jsonl"))), "a refused resume writes nothing");
    });

    await t.step("a plan for another target topology is refused", async () => {
      const other = target(2, 2, [[0, 1], [2, 3]]);
      const r = await resumeWith(quickPlan, other);
      assert.equal(r.code, 1);
      assert.match(
        r.stderr[0],
        /was made for another target topology: parameters\.layers\.0\.experts\.w1\.target_map differs from this run's \(world_size 2, ep_size 2, .*placement \[\[0,1\],\[2,3\]\]\)/,
      );
      const ep1 = await resumeWith(quickPlan, target(2, 1, null));
      assert.equal(ep1.code, 1);
      assert.match(ep1.stderr[0], /made for another target topology: parameters\.embed\.weight/);
    });

    await t.step("a plan made from another checkpoint is refused", async () => {
      const ck2 = join(root, "ck2");
      const r0 = await runInProcess([
        "train",
        ...target(2, 2, [[0, 1], [2, 3]]).flags,
        "--steps",
        "40",
        "--stop-at",
        "20",
        "--save-at",
        "20",
        "--checkpoint-dir",
        ck2,
        "--metrics-file",
        join(root, "ck2.jsonl"),
      ]);
      assert.equal(r0.code, 0, r0.stderr.join("\n"));
      const r = await runInProcess([
        "train",
        "--steps",
        "40",
        "--metrics-file",
        join(root, "refused.jsonl"),
        "--resume-from",
        join(ck2, "global_step20"),
        "--resume-kind",
        "plan",
        "--plan",
        quickPlan,
        ...QUICKSTART_TARGET.flags,
      ]);
      assert.equal(r.code, 1);
      assert.match(
        r.stderr[0],
        /was made for another checkpoint: parameters\.layers\.0\.experts\.w1\.source_map differs from .*ck2.*global_step20's/,
      );
    });

    await t.step("plan refuses an unknown policy with exit 2 (real subprocess)", async () => {
      const out = join(root, "unknown.json");
      const r = await runSubprocess([
        "plan",
        "--source-checkpoint",
        tag,
        "--target",
        writeTarget("quickstart", QUICKSTART_TARGET),
        "--policy",
        "round_robin",
        "--out",
        out,
      ], root);
      assert.equal(r.code, 2);
      assert.deepEqual(r.stderr, [
        `trainer plan: error: --policy "round_robin" is unknown (known: ${
          REPLICA_POLICY_NAMES.join(", ")
        })`,
      ]);
      assert.ok(!(await exists(out)));
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

async function tinyCheckpoint(root: string): Promise<string> {
  const r = await runInProcess([
    "train",
    "--world-size",
    "2",
    "--ep-size",
    "2",
    "--steps",
    "2",
    "--stop-at",
    "1",
    "--save-at",
    "1",
    "--checkpoint-dir",
    join(root, "ck"),
    "--metrics-file",
    join(root, "m.jsonl"),
  ]);
  assert.equal(r.code, 0, r.stderr.join("\n"));
  return join(root, "ck", "global_step1");
}

Deno.test("plan usage errors exit 2 with one line and write nothing", async () => {
  const root = await Deno.makeTempDir({ prefix: "reference_plan_test_" });
  try {
    const tag = await tinyCheckpoint(root);
    const targetFile = join(root, "t.json");
    Deno.writeTextFileSync(targetFile, JSON.stringify({ world_size: 2, ep_size: 2 }));
    const base = ["--source-checkpoint", tag, "--target", targetFile, "--out", join(root, "p")];
    const cases: [string[], RegExp][] = [
      [[...base], /--policy is required/],
      [[...base, "--policy", "balanced", "--fault", "nope"], /--fault nope is unknown/],
      [[...base, "--policy", "balanced", "--element-size", "0"], /--element-size must be/],
      [[...base, "--policy", "balanced", "--bogus", "1"], /unknown flag --bogus/],
      [
        ["--source-checkpoint", tag, "--target", join(root, "missing.json"), "--out", "x"].concat(
          ["--policy", "balanced"],
        ),
        /--target: cannot read file/,
      ],
    ];
    for (const [argv, message] of cases) {
      const r = await runInProcess(["plan", ...argv]);
      assert.equal(r.code, 2, argv.join(" "));
      assert.equal(r.stderr.length, 1);
      assert.match(r.stderr[0], message);
    }
    Deno.writeTextFileSync(targetFile, JSON.stringify({ world_size: 3, ep_size: 2 }));
    const bad = await runInProcess(["plan", ...base, "--policy", "balanced"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr[0], /--ep-size 2 does not divide --world-size 3/);
    assert.ok(!(await exists(join(root, "p"))));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("plan reads only the checkpoint metadata; a missing checkpoint exits 1", async () => {
  const root = await Deno.makeTempDir({ prefix: "reference_plan_test_" });
  try {
    const tag = await tinyCheckpoint(root);
    const full = readNative(tag);
    const meta = readNativeMetadata(tag);
    assert.deepEqual(meta.common, full.common);
    assert.deepEqual([...meta.maps.keys()], [...full.maps.keys()]);
    // Without the optimizer partitions a full read fails, a metadata read does not.
    for (const entry of Deno.readDirSync(tag)) {
      if (entry.name.endsWith("optim_states.safetensors")) Deno.removeSync(join(tag, entry.name));
    }
    assert.throws(() => readNative(tag), /optim_states\.safetensors is missing/);
    const targetFile = join(root, "t.json");
    Deno.writeTextFileSync(targetFile, JSON.stringify({ world_size: 1, grad_accum: 4 }));
    const out = join(root, "sub", "plan.json");
    const ok = await runInProcess([
      "plan",
      "--source-checkpoint",
      tag,
      "--target",
      targetFile,
      "--policy",
      "first_holder",
      "--out",
      out,
    ]);
    assert.equal(ok.code, 0, ok.stderr.join("\n"));
    const plan = await readPlanFile(out);
    assert.deepEqual(plan.source_processes, { "0": 0, "1": 1 });
    assert.deepEqual(plan.target_processes, { "0": 0 });
    assert.deepEqual([...Deno.readDirSync(join(root, "sub"))].map((e) => e.name), ["plan.json"]);

    const gone = await runInProcess([
      "plan",
      "--source-checkpoint",
      join(root, "nowhere"),
      "--target",
      targetFile,
      "--policy",
      "first_holder",
      "--out",
      join(root, "p2.json"),
    ]);
    assert.equal(gone.code, 1);
    assert.match(
      gone.stderr[0],
      /^trainer plan: error: checkpoint folder .*nowhere does not exist/,
    );
    Deno.removeSync(join(tag, "checkpoint_complete.json"));
    const partial = await runInProcess([
      "plan",
      "--source-checkpoint",
      tag,
      "--target",
      targetFile,
      "--policy",
      "first_holder",
      "--out",
      join(root, "p3.json"),
    ]);
    assert.equal(partial.code, 1);
    assert.match(partial.stderr[0], /has no checkpoint_complete\.json/);
    assert.ok(!(await exists(join(root, "p3.json"))));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("writeVerifiedPlan() leaves no file behind when the plan fails verification", async () => {
  const root = await Deno.makeTempDir({ prefix: "reference_plan_test_" });
  try {
    const tag = await tinyCheckpoint(root);
    const targetFile = join(root, "t.json");
    Deno.writeTextFileSync(targetFile, JSON.stringify({ world_size: 2, ep_size: 2 }));
    const good = join(root, "good.json");
    const r = await runInProcess([
      "plan",
      "--source-checkpoint",
      tag,
      "--target",
      targetFile,
      "--policy",
      "balanced",
      "--out",
      good,
    ]);
    assert.equal(r.code, 0, r.stderr.join("\n"));
    const plan = await readPlanFile(good);
    // A planner bug: one segment reads from a location that does not hold its elements.
    const seg = plan.parameters["head.weight"].segments[0];
    seg.source[0] = 1 - seg.source[0];
    const out = join(root, "bad.json");
    await assert.rejects(
      () => writeVerifiedPlan(out, plan),
      /the plan fails verification, not written: parameters\.head\.weight\.segments\[0\]/,
    );
    assert.deepEqual(
      [...Deno.readDirSync(root)].map((e) => e.name).filter((n) => n.includes("bad")),
      [],
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("epRankProcesses() maps EP rank p to process p", () => {
  assert.deepEqual([...epRankProcesses(3)], [[0, 0], [1, 1], [2, 2]]);
});

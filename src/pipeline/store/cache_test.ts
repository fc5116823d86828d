import assert from "node:assert/strict";
import { join } from "node:path";
import { ExperimentObjectSchema } from "../../experiment/schema.ts";
import { resolvePlan } from "../../experiment/mod.ts";
import {
  cacheKeyEnv,
  checkpointProblem,
  codeInputsDigest,
  findCachedPhase,
  phaseCacheKey,
  SECRET_LEFT_OUT_REASON,
} from "./cache.ts";
import { hashPhaseOutputs } from "./output_hashes.ts";
import { listRuns, writeJsonAtomic } from "./run_store.ts";

const exp = (seed = 1, env: Record<string, string> = {}) =>
  ExperimentObjectSchema.parse({
    name: "k",
    seed,
    schedule: { steps: 8, save_at: 4 },
    trainer: { command: ["train", "--out", "${metrics_file}", "--from", "${resume_from}"], env },
    resume: { native: { from: "native" } },
  });

/** The key of `resume-native` for an experiment whose run folder is `runDir`. */
async function resumeKey(e: ReturnType<typeof exp>, runDir: string, splitKey = "split-key") {
  const plan = resolvePlan(e, { runDir, baseDir: "/exp", harnessEnv: {} });
  const spec = plan.phases.find((s) => s.name === "resume-native")!;
  return await phaseCacheKey(spec, [splitKey], "code");
}

Deno.test("phaseCacheKey() ignores where the run folder is, but not what runs", async () => {
  const a = await resumeKey(exp(), "/results/k/run-a");
  assert.equal(a, await resumeKey(exp(), "/elsewhere/k/run-b"), "paths are abstracted");
  assert.notEqual(a, await resumeKey(exp(2), "/results/k/run-a"), "the seed is an input");
  assert.notEqual(
    a,
    await resumeKey(exp(), "/results/k/run-a", "other-split"),
    "so is the producer",
  );
  assert.notEqual(a, await resumeKey(exp(1, { MODE: "x" }), "/results/k/run-a"), "and the env");
});

Deno.test("phaseCacheKey() keys the save a resume loads (its tag's path is a token)", async () => {
  const fromStep = async (step: number | undefined) => {
    const e = ExperimentObjectSchema.parse({
      name: "k",
      seed: 1,
      schedule: { steps: 8, save_at: [2, 4] },
      trainer: { command: ["train", "--from", "${resume_from}"] },
      resume: { native: { from: "native", ...(step ? { from_step: step } : {}) } },
    });
    return await resumeKey(e, "/r");
  };
  // The same resume moved from step 4's save to step 2's must not reuse the old result.
  assert.notEqual(await fromStep(2), await fromStep(4));
  assert.equal(await fromStep(undefined), await fromStep(4), "the default is the last save");
});

Deno.test("phaseCacheKey() keys a planner's target topology, which reaches it through a file", async () => {
  const planKey = async (target: Record<string, unknown>) => {
    const e = ExperimentObjectSchema.parse({
      name: "k",
      seed: 1,
      schedule: { steps: 8, save_at: 4 },
      trainer: { preset: "reference", args: { world_size: 2 } },
      plan_sync: { target, policies: ["first_holder"] },
    });
    const plan = resolvePlan(e, { runDir: "/r", baseDir: "/exp", harnessEnv: {} });
    const spec = plan.phases.find((s) => s.role === "plan")!;
    return await phaseCacheKey(spec, ["split-key"], "code");
  };
  // Two members of a suite that differ only in the target must never share a plan.
  assert.notEqual(await planKey({ world_size: 1 }), await planKey({ world_size: 4 }));
});

Deno.test("phaseCacheKey() leaves secret-looking variables out of the key", async () => {
  assert.equal(
    await resumeKey(exp(1, { HF_TOKEN: "one" }), "/r"),
    await resumeKey(exp(1, { HF_TOKEN: "two" }), "/r"),
  );
});

Deno.test("phaseCacheKey() keys TOKENIZERS_PARALLELISM: only secret-named variables are left out", async () => {
  assert.notEqual(
    await resumeKey(exp(1, { TOKENIZERS_PARALLELISM: "true" }), "/r"),
    await resumeKey(exp(1, { TOKENIZERS_PARALLELISM: "false" }), "/r"),
  );
  assert.deepEqual(
    cacheKeyEnv({ TOKENIZERS_PARALLELISM: "false", HF_TOKEN: "x", API_KEY: "y", MODE: "m" }),
    {
      env: { TOKENIZERS_PARALLELISM: "false", MODE: "m" },
      leftOut: [
        { name: "HF_TOKEN", reason: SECRET_LEFT_OUT_REASON },
        { name: "API_KEY", reason: SECRET_LEFT_OUT_REASON },
      ],
    },
  );
});

Deno.test("codeInputsDigest() follows file contents and command output", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "train.py"), "print(1)");
    const first = await codeInputsDigest(["train.py", "!echo v1"], dir, {});
    assert.equal(first, await codeInputsDigest(["train.py", "!echo v1"], dir, {}));
    assert.notEqual(first, await codeInputsDigest(["train.py", "!echo v2"], dir, {}));
    await Deno.writeTextFile(join(dir, "train.py"), "print(2)");
    assert.notEqual(first, await codeInputsDigest(["train.py", "!echo v1"], dir, {}));
    assert.notEqual(
      await codeInputsDigest(["missing.py"], dir, {}),
      await codeInputsDigest([], dir, {}),
      "a missing input is part of the digest",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("findCachedPhase() reuses only completed phases with the same key and their outputs", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const run = (id: string) => join(dir, `20261129T10000${id}Z-000abc`);
    const record = async (id: string, extra: Record<string, unknown>) => {
      const phaseDir = join(run(id), "phases", "baseline");
      await Deno.mkdir(phaseDir, { recursive: true });
      await Deno.writeTextFile(join(phaseDir, "metrics.jsonl"), '{"step":1,"loss":1}\n');
      const outputs = { metrics: join(phaseDir, "metrics.jsonl") };
      await writeJsonAtomic(join(phaseDir, "phase.json"), {
        name: "baseline",
        role: "baseline",
        status: "ok",
        cache_key: "K",
        outputs,
        output_hashes: await hashPhaseOutputs(phaseDir, outputs),
        ...extra,
      });
    };
    await record("1", {});
    await record("2", { status: "failed" });
    await record("3", { cache_key: "other" });
    await Deno.mkdir(join(run("4"), "phases", "baseline"), { recursive: true }); // no marker
    const hit = await findCachedPhase(await listRuns(dir), "baseline", "K", run("5"));
    assert.equal(hit?.runDir, run("1"));
    assert.equal(
      await findCachedPhase(await listRuns(dir), "baseline", "K", run("1")),
      undefined,
      "not from itself",
    );
    await Deno.remove(join(run("1"), "phases/baseline/metrics.jsonl"));
    assert.equal(
      await findCachedPhase(await listRuns(dir), "baseline", "K", run("5")),
      undefined,
      "outputs gone",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("findCachedPhase() reuses a phase only if its outputs match their recorded hashes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const run = (id: string) => join(dir, `20261129T10000${id}Z-000abc`);
    const phaseDir = (id: string, phase = "resume-native") => join(run(id), "phases", phase);
    const write = async (id: string, phase: string, tamper: Record<string, unknown> = {}) => {
      await Deno.mkdir(phaseDir(id, phase), { recursive: true });
      const metrics = join(phaseDir(id, phase), "metrics.jsonl");
      await Deno.writeTextFile(metrics, '{"step":1,"loss":1}\n{"step":2,"loss":0.5}\n');
      const outputs = { metrics };
      await writeJsonAtomic(join(phaseDir(id, phase), "phase.json"), {
        name: phase,
        role: "resume",
        status: "ok",
        cache_key: "K",
        outputs,
        output_hashes: await hashPhaseOutputs(phaseDir(id, phase), outputs),
        ...tamper,
      });
    };
    const reasons: string[] = [];
    const find = async () => {
      reasons.length = 0;
      return findCachedPhase(
        await listRuns(dir),
        "resume-native",
        "K",
        run("9"),
        (_, why) => reasons.push(why),
      );
    };

    await write("1", "resume-native");
    assert.equal((await find())?.runDir, run("1"));
    // A truncated metrics file is not reused.
    await Deno.writeTextFile(join(phaseDir("1"), "metrics.jsonl"), '{"step":1,"loss":1}\n{"st');
    assert.equal(await find(), undefined);
    assert.match(reasons.join("\n"), /metrics.jsonl changed since the phase completed/);

    // A phase.json edited to point its metrics at another phase's file is not reused.
    await write("2", "baseline");
    await write("2", "resume-native", {
      outputs: { metrics: join(phaseDir("2", "baseline"), "metrics.jsonl") },
    });
    assert.equal(await find(), undefined);
    assert.match(reasons.join("\n"), /names an output outside its folder/);

    // A record without hashes (older harness, or hashes removed) is not trusted.
    await write("3", "resume-native", { output_hashes: undefined });
    assert.equal(await find(), undefined);
    assert.match(reasons.join("\n"), /records no content hashes/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkpointProblem() verifies a fused split's baseline like a split, a plain baseline not", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const base = { name: "baseline", role: "baseline", status: "ok", cached: false } as const;
    const fused = { ...base, wall_s: 1, exit_code: 0, outputs: { checkpoint_tag: "t" } };
    assert.match(
      (await checkpointProblem(dir, fused, "full")) ?? "",
      /records no checkpoint hashes/,
    );
    assert.equal(
      await checkpointProblem(dir, { ...base, wall_s: 1, exit_code: 0, outputs: {} }, "full"),
      null,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

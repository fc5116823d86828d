import assert from "node:assert/strict";
import { extract, rebuild } from "../../src/affine/map.ts";
import {
  join,
  QUICKSTART,
  readMetrics,
  runInProcess,
} from "../../test/_testing/reference_trainer.ts";
import { readNative } from "./checkpoint.ts";
import { registerResumeLoader, resolveResume, resumeKinds } from "./resume.ts";
import type { ShardSet } from "../model/state.ts";

// A stand-in for a plan executor: moves every shard from the saved layout to the target layout
// through the two affine maps, as `--resume-kind plan` will do with plan segments.
registerResumeLoader("test-reslice", ({ path, layout }) => {
  const ck = readNative(path);
  const shards = new Map<string, ShardSet>();
  for (const [name, source] of ck.shards) {
    const from = ck.maps.get(name)!, to = layout.maps.get(name)!;
    const move = (m: Map<number, Float32Array>) => {
      const full = rebuild(from, m);
      return new Map([...to.ranks.keys()].map((p) => [p, extract(to, full, p)]));
    };
    shards.set(name, {
      fp32: move(source.fp32),
      expAvg: move(source.expAvg),
      expAvgSq: move(source.expAvgSq),
    });
  }
  return { kind: "test-reslice", path, common: ck.common, shards };
});

Deno.test("registerResumeLoader() plugs a resume kind in that matches the universal path bit for bit", async () => {
  assert.ok(resumeKinds().includes("test-reslice"));
  const root = await Deno.makeTempDir({ prefix: "reference_resume_test_" });
  try {
    const run = async (argv: string[]) => {
      const file = join(root, `${argv.join("_").replaceAll(/\W+/g, "")}.jsonl`);
      const r = await runInProcess(["train", "--steps", "10", "--metrics-file", file, ...argv]);
      assert.equal(r.code, 0, r.stderr.join("\n"));
      return readMetrics(file);
    };
    const ck = join(root, "ck");
    const split = await run([
      ...QUICKSTART,
      "--stop-at",
      "5",
      "--save-at",
      "5",
      "--checkpoint-dir",
      ck,
    ]);
    assert.equal(
      (await runInProcess([
        "convert",
        "--input_folder",
        join(ck, "global_step5"),
        "--output_folder",
        join(ck, "u"),
      ]))
        .code,
      0,
    );
    const target = [
      "--world-size",
      "6",
      "--ep-size",
      "3",
      "--placement",
      "[[0,1],[1,2],[3]]",
      "--precision",
      "bf16",
      "--grad-accum",
      "2",
      "--quiet",
    ];
    const viaPlugin = await run([...target, "--resume-from", ck, "--resume-kind", "test-reslice"]);
    const viaUniversal = await run([...target, "--resume-from", join(ck, "u")]);
    assert.equal(viaPlugin.events.get("loaded")!.kind, "test-reslice");
    assert.deepEqual(viaPlugin.events.get("loaded")!.digests, split.events.get("saved")!.digests);
    assert.deepEqual([...viaPlugin.steps.values()], [...viaUniversal.steps.values()]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("resolveResume() follows latest pointers and detects the kind", async () => {
  const root = await Deno.makeTempDir();
  try {
    const ck = join(root, "ck");
    const r = await runInProcess([
      "train",
      "--steps",
      "2",
      "--save-at",
      "1",
      "--stop-at",
      "1",
      "--checkpoint-dir",
      ck,
      "--metrics-file",
      join(root, "m.jsonl"),
    ]);
    assert.equal(r.code, 0);
    assert.deepEqual(resolveResume(ck, null), { path: join(ck, "global_step1"), kind: "native" });
    await runInProcess([
      "convert",
      "--input_folder",
      join(ck, "global_step1"),
      "--output_folder",
      join(ck, "u1"),
    ]);
    assert.deepEqual(resolveResume(ck, "universal"), { path: join(ck, "u1"), kind: "universal" });
    assert.deepEqual(resolveResume(join(ck, "u1"), null), {
      path: join(ck, "u1"),
      kind: "universal",
    });
    assert.throws(
      () => resolveResume(join(ck, "u1"), "native"),
      /is a universal checkpoint, not native/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

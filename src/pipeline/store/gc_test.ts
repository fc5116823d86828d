import { deepEqual, equal, match, ok, rejects } from "node:assert/strict";
import { captureConsole } from "../../../test/_testing/capture_console.ts";
import { join } from "node:path";
import { collectGarbage, type GcReport, pruneOlderRuns, pruneRunCheckpoints } from "./gc.ts";
import { acquireRunLock } from "./lock.ts";
import { main } from "../../cli/main.ts";

const R1 = "20261101T100000Z-aaaaaa"; // old, unreferenced: garbage
const R2 = "20261102T100000Z-bbbbbb"; // the latest run reuses its split
const R3 = "20261103T100000Z-cccccc"; // latest
const R4 = "20261104T100000Z-dddddd"; // newer than latest (crashed mid-run): kept for resume

interface Tree {
  tmp: string;
  results: string;
  outside: string;
  exp: string;
}

async function withTree(fn: (t: Tree) => Promise<void>): Promise<void> {
  const tmp = await Deno.realPath(await Deno.makeTempDir({ prefix: "gc_test_" }));
  try {
    const results = join(tmp, "results");
    const outside = join(tmp, "outside");
    await Deno.mkdir(outside, { recursive: true });
    await Deno.writeTextFile(join(outside, "precious.bin"), "x".repeat(100));
    const exp = join(results, "quickstart");
    for (const run of [R1, R2, R3, R4]) await fabricateRun(exp, run);
    await Deno.symlink(R3, join(exp, "latest"));
    await fn({ tmp, results, outside, exp });
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(join(path, ".."), { recursive: true });
  await Deno.writeTextFile(path, text);
}

async function writePhase(runDir: string, name: string, extra: Record<string, unknown>) {
  const dir = join(runDir, "phases", name);
  await write(join(dir, "metrics.jsonl"), '{"step":1,"loss":2.5}\n');
  await write(join(dir, "stdout.log"), `${name} out\n`);
  await write(join(dir, "stderr.log"), "");
  await write(
    join(dir, "phase.json"),
    JSON.stringify({
      name,
      status: "ok",
      cached: false,
      outputs: { metrics: join(dir, "metrics.jsonl") },
      ...extra,
    }),
  );
  return dir;
}

/**
 * A run with a split (checkpoint of 1000 + 24 bytes), a convert (universal of 300 bytes), a native
 * and a universal resume whose outputs name their inputs (which gc must not delete).
 */
async function fabricateRun(exp: string, run: string): Promise<void> {
  const runDir = join(exp, run);
  await write(join(runDir, "summary.json"), '{"verdict":"PASS"}\n');
  const split = await writePhase(runDir, "split", { role: "split" });
  await write(
    join(split, "checkpoints", "global_step20", "mp_rank_00_model_states.pt"),
    "m".repeat(1000),
  );
  await write(join(split, "checkpoints", "latest"), "global_step20\n".padEnd(24, " "));
  await rewriteOutputs(split, { checkpoint_dir: join(split, "checkpoints") });
  const convert = await writePhase(runDir, "convert", { role: "convert" });
  const universal = join(convert, "global_step20_universal");
  await write(join(universal, "zero", "w", "fp32.pt"), "u".repeat(300));
  await rewriteOutputs(convert, { universal });
  const resume = await writePhase(runDir, "resume-native", { role: "resume" });
  await rewriteOutputs(resume, { checkpoint_dir: join(split, "checkpoints") });
  const resumeU = await writePhase(runDir, "resume-universal", { role: "resume" });
  await rewriteOutputs(resumeU, { checkpoint_dir: convert });
}

async function rewriteOutputs(phaseDir: string, outputs: Record<string, string>) {
  const path = join(phaseDir, "phase.json");
  const phase = JSON.parse(await Deno.readTextFile(path));
  phase.outputs = { ...phase.outputs, ...outputs };
  await Deno.writeTextFile(path, JSON.stringify(phase));
}

async function setPhaseField(path: string, key: string, value: unknown) {
  const phase = JSON.parse(await Deno.readTextFile(path));
  phase[key] = value;
  await Deno.writeTextFile(path, JSON.stringify(phase));
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** Snapshot of every file's content under a folder (symlinks as `-> target`). */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const visit = async (p: string, rel: string) => {
    for await (const e of Deno.readDir(p)) {
      const full = join(p, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isSymlink) out[r] = `-> ${await Deno.readLink(full)}`;
      else if (e.isDirectory) await visit(full, r);
      else out[r] = await Deno.readTextFile(full);
    }
  };
  await visit(dir, "");
  return out;
}

function pathsOf(report: GcReport): string[] {
  return report.folders.map((f) => f.path).sort();
}

/** The latest run R3 reuses R2's split (`source_run`); R1 is unreferenced. */
async function linkLatestToR2(exp: string): Promise<void> {
  await setPhaseField(join(exp, R3, "phases", "split", "phase.json"), "cached", true);
  await setPhaseField(join(exp, R3, "phases", "split", "phase.json"), "source_run", join(exp, R2));
}

Deno.test("collectGarbage() deletes only checkpoints of runs the latest run neither is nor reuses", async () => {
  await withTree(async ({ results, exp }) => {
    await linkLatestToR2(exp);
    const kept = await Promise.all([R2, R3, R4].map((r) => snapshot(join(exp, r))));
    const before = await snapshot(join(exp, R1));
    const report = await collectGarbage(results);
    deepEqual(pathsOf(report), [
      join(exp, R1, "phases", "convert", "global_step20_universal"),
      join(exp, R1, "phases", "split", "checkpoints"),
    ]);
    deepEqual(report.experiments.map((e) => [e.experiment, e.latest, e.keptRuns]), [
      ["quickstart", R3, [R2, R3, R4]],
    ]);
    equal(report.bytesFreed, 1000 + 24 + 300);
    deepEqual(report.folders.map((f) => [f.phase, f.kind, f.bytes, f.deleted]).sort(), [
      ["convert", "universal", 300, true],
      ["split", "checkpoints", 1024, true],
    ]);
    deepEqual(report.refused, []);
    // Kept runs are byte-for-byte untouched.
    deepEqual(await Promise.all([R2, R3, R4].map((r) => snapshot(join(exp, r)))), kept);
    // In R1, only the two checkpoint folders went; metrics, logs, summary stay.
    const after = await snapshot(join(exp, R1));
    const gone = Object.keys(before).filter((k) => !(k in after)).sort();
    deepEqual(gone, [
      "phases/convert/global_step20_universal/zero/w/fp32.pt",
      "phases/split/checkpoints/global_step20/mp_rank_00_model_states.pt",
      "phases/split/checkpoints/latest",
    ]);
    for (const k of Object.keys(after)) {
      if (!k.endsWith("phase.json")) equal(after[k], before[k], k);
    }
    // The owning phase.json files are marked; the resumes (inputs only) are not.
    for (const phase of ["split", "convert"]) {
      const json = JSON.parse(after[`phases/${phase}/phase.json`]);
      const old = JSON.parse(before[`phases/${phase}/phase.json`]);
      equal(json.artifacts_pruned, true);
      deepEqual({ ...json, artifacts_pruned: undefined, pruned_at: undefined, pruned: undefined }, {
        ...old,
        artifacts_pruned: undefined,
        pruned_at: undefined,
        pruned: undefined,
      });
    }
    deepEqual(JSON.parse(after["phases/split/phase.json"]).pruned, ["checkpoints"]);
    for (const phase of ["resume-native", "resume-universal"]) {
      equal(after[`phases/${phase}/phase.json`], before[`phases/${phase}/phase.json`]);
    }
    // A second collection finds nothing left.
    equal((await collectGarbage(results)).folders.length, 0);
  });
});

Deno.test("collectGarbage() with dryRun lists the same folders and sizes but changes nothing", async () => {
  await withTree(async ({ results, exp }) => {
    await linkLatestToR2(exp);
    const before = await snapshot(results);
    const dry = await collectGarbage(results, { dryRun: true });
    deepEqual(await snapshot(results), before);
    ok(dry.folders.every((f) => !f.deleted));
    const real = await collectGarbage(results);
    deepEqual(pathsOf(dry), pathsOf(real));
    equal(dry.bytesFreed, real.bytesFreed);
  });
});

Deno.test("collectGarbage() without source_run keeps only the latest and newer runs", async () => {
  await withTree(async ({ results, exp }) => {
    const report = await collectGarbage(results);
    deepEqual(report.experiments[0].keptRuns, [R3, R4]);
    deepEqual([...new Set(report.folders.map((f) => f.run))], [R1, R2]);
    ok(await exists(join(exp, R4, "phases", "split", "checkpoints", "global_step20")));
  });
});

Deno.test("collectGarbage() follows references transitively and by run id when paths moved", async () => {
  await withTree(async ({ results, exp }) => {
    // R3's convert output lives in R2 (recorded under an old location); R2 reuses R1's split.
    await setPhaseField(
      join(exp, R3, "phases", "convert", "phase.json"),
      "source_run",
      `/old/place/results/quickstart/${R2}`,
    );
    await setPhaseField(
      join(exp, R2, "phases", "split", "phase.json"),
      "source_run",
      join(exp, R1),
    );
    const report = await collectGarbage(results);
    deepEqual(report.experiments[0].keptRuns, [R1, R2, R3, R4]);
    deepEqual(report.folders, []);
  });
});

Deno.test("collectGarbage() keeps a run a cached phase points into through its outputs", async () => {
  await withTree(async ({ results, exp }) => {
    // Shaped like the runner's reuse: links to the source's logs, outputs naming its folders.
    const split = join(exp, R3, "phases", "split");
    await Deno.remove(split, { recursive: true });
    await Deno.mkdir(split, { recursive: true });
    const source = join(exp, R2, "phases", "split");
    await Deno.symlink(join(source, "metrics.jsonl"), join(split, "metrics.jsonl"));
    await write(
      join(split, "phase.json"),
      JSON.stringify({
        name: "split",
        status: "ok",
        cached: true,
        outputs: { checkpoint_dir: join(source, "checkpoints"), dir: source },
      }),
    );
    const report = await collectGarbage(results);
    deepEqual(report.experiments[0].keptRuns, [R2, R3, R4]);
    ok(await exists(join(source, "checkpoints", "global_step20")));
    // Pruning the latest run alone never reaches into the run it reuses.
    const own = await pruneRunCheckpoints(join(exp, R3));
    deepEqual(pathsOf(own), [join(exp, R3, "phases", "convert", "global_step20_universal")]);
    ok(await exists(join(source, "checkpoints", "global_step20")));
  });
});

Deno.test("collectGarbage() also prunes checkpoints kept in attempt folders of old runs", async () => {
  await withTree(async ({ results, exp }) => {
    const attempt = join(exp, R1, "phases", "split", "attempt-1");
    await write(join(attempt, "checkpoints", "global_step20", "partial.pt"), "p".repeat(50));
    await write(join(attempt, "phase.json"), JSON.stringify({ name: "split", status: "failed" }));
    await write(join(attempt, "stderr.log"), "NCCL timeout\n");
    const report = await collectGarbage(results, { experiment: "quickstart" });
    const pruned = report.folders.find((f) => f.path === join(attempt, "checkpoints"));
    equal(pruned?.bytes, 50);
    equal(pruned?.phase, "split");
    equal(JSON.parse(await Deno.readTextFile(join(attempt, "phase.json"))).artifacts_pruned, true);
    equal(await Deno.readTextFile(join(attempt, "stderr.log")), "NCCL timeout\n");
  });
});

Deno.test("collectGarbage() refuses a checkpoint symlink pointing outside the results folder", async () => {
  await withTree(async ({ results, exp, outside }) => {
    const link = join(exp, R1, "phases", "split", "checkpoints");
    await Deno.remove(link, { recursive: true });
    await Deno.symlink(outside, link);
    const report = await collectGarbage(results);
    deepEqual(report.refused.map((r) => r.path), [link]);
    match(report.refused[0].reason, /symlink pointing outside the results folder/);
    ok(!pathsOf(report).includes(link));
    ok(await exists(link), "the link itself is left alone");
    equal(await Deno.readTextFile(join(outside, "precious.bin")), "x".repeat(100));
    // Its phase was not marked pruned: nothing of it was deleted.
    const phase = JSON.parse(
      await Deno.readTextFile(join(exp, R1, "phases", "split", "phase.json")),
    );
    equal(phase.artifacts_pruned, undefined);
  });
});

Deno.test("collectGarbage() removes a symlink to another run's checkpoint without following it", async () => {
  await withTree(async ({ results, exp }) => {
    // R1's universal is a link to R3's (kept) folder: the link goes, the target stays.
    const link = join(exp, R1, "phases", "convert", "global_step20_universal");
    await Deno.remove(link, { recursive: true });
    const target = join(exp, R3, "phases", "convert", "global_step20_universal");
    await Deno.symlink(target, link);
    const report = await collectGarbage(results);
    const entry = report.folders.find((f) => f.path === link);
    equal(entry?.bytes, 0);
    ok(!(await exists(link)));
    equal(await Deno.readTextFile(join(target, "zero", "w", "fp32.pt")), "u".repeat(300));
  });
});

Deno.test("collectGarbage() refuses a phase folder reached through a symlinked parent", async () => {
  await withTree(async ({ results, exp, outside }) => {
    // A declared output under a symlinked sub-folder of the phase: the path leads outside.
    await write(join(outside, "ckpt", "rank0.pt"), "r");
    const convert = join(exp, R1, "phases", "convert");
    await Deno.symlink(outside, join(convert, "elsewhere"));
    await rewriteOutputs(convert, { universal: join(convert, "elsewhere", "ckpt") });
    const report = await collectGarbage(results);
    deepEqual(report.refused.map((r) => [r.path, r.reason]), [
      [join(convert, "elsewhere", "ckpt"), "its parent folder is reached through a symlink"],
    ]);
    equal(await Deno.readTextFile(join(outside, "ckpt", "rank0.pt")), "r");
  });
});

Deno.test("collectGarbage() skips an experiment whose run lock is held by a live run", async () => {
  await withTree(async ({ results, exp }) => {
    const lock = await acquireRunLock(exp);
    try {
      const before = await snapshot(exp);
      const report = await collectGarbage(results);
      match(
        report.experiments[0].skipped ?? "",
        new RegExp(`a run is in progress \\(PID ${Deno.pid}, `),
      );
      deepEqual(report.folders, []);
      deepEqual(await snapshot(exp), before);
    } finally {
      await lock.release();
    }
    equal((await collectGarbage(results)).folders.length, 4);
    ok(!(await exists(join(exp, ".lock"))), "gc releases the lock it took");
  });
});

Deno.test("collectGarbage() leaves an experiment without a latest run alone, and with keep none prunes all", async () => {
  await withTree(async ({ results, exp }) => {
    await Deno.remove(join(exp, "latest"));
    const report = await collectGarbage(results);
    match(report.experiments[0].skipped ?? "", /no valid 'latest' run/);
    deepEqual(report.folders, []);
    const all = await collectGarbage(results, { keep: "none" });
    equal(all.folders.length, 8);
    equal(all.bytesFreed, 4 * 1324);
  });
});

Deno.test("collectGarbage() refuses a latest link that leaves the experiment", async () => {
  await withTree(async ({ results, exp, outside }) => {
    await Deno.remove(join(exp, "latest"));
    await Deno.symlink(outside, join(exp, "latest"));
    const report = await collectGarbage(results);
    deepEqual(report.refused.map((r) => r.path), [join(exp, "latest")]);
    deepEqual(report.folders, []);
  });
});

Deno.test("collectGarbage() counts a hard-linked file once", async () => {
  await withTree(async ({ results, exp }) => {
    const ckpt = join(exp, R1, "phases", "split", "checkpoints", "global_step20");
    await Deno.link(join(ckpt, "mp_rank_00_model_states.pt"), join(ckpt, "alias.pt"));
    const report = await collectGarbage(results, { dryRun: true });
    equal(report.folders.find((f) => f.run === R1 && f.kind === "checkpoints")?.bytes, 1024);
  });
});

Deno.test("pruneRunCheckpoints() empties one run of its checkpoints and marks its phases", async () => {
  await withTree(async ({ exp }) => {
    const others = await Promise.all([R1, R2, R4].map((r) => snapshot(join(exp, r))));
    const report = await pruneRunCheckpoints(join(exp, R3));
    deepEqual(pathsOf(report), [
      join(exp, R3, "phases", "convert", "global_step20_universal"),
      join(exp, R3, "phases", "split", "checkpoints"),
    ]);
    ok(report.folders.every((f) => f.experiment === "quickstart" && f.run === R3));
    ok(!(await exists(join(exp, R3, "phases", "split", "checkpoints"))));
    ok(await exists(join(exp, R3, "phases", "split", "metrics.jsonl")));
    const split = JSON.parse(
      await Deno.readTextFile(join(exp, R3, "phases", "split", "phase.json")),
    );
    equal(split.artifacts_pruned, true);
    deepEqual(await Promise.all([R1, R2, R4].map((r) => snapshot(join(exp, r)))), others);
  });
});

Deno.test("pruneOlderRuns() keeps the latest run and what it reuses, without taking the lock", async () => {
  await withTree(async ({ exp }) => {
    await linkLatestToR2(exp);
    const lock = await acquireRunLock(exp); // the runner holds it while pruning
    try {
      const report = await pruneOlderRuns(exp);
      deepEqual([...new Set(report.folders.map((f) => f.run))], [R1]);
      ok(await exists(join(exp, R2, "phases", "split", "checkpoints")));
    } finally {
      await lock.release();
    }
  });
});

Deno.test("parity gc --dry-run prints each folder with its size and the total, deleting nothing", async () => {
  await withTree(async ({ results, exp }) => {
    await linkLatestToR2(exp);
    const before = await snapshot(results);
    const { value: code, out } = await captureConsole(() =>
      main(["gc", results, "--dry-run", "--experiment", "quickstart"])
    );
    equal(code, 0);
    match(out, new RegExp(`quickstart: latest ${R3}; keeping ${R2}, ${R3}, ${R4}`));
    match(out, /would free\s+1\sKiB\s+\S*phases\/split\/checkpoints/);
    match(out, /would free\s+300\sB\s+\S*global_step20_universal/);
    match(out, /dry run: would free 1\.293\sKiB in 2 folders; nothing was deleted$/);
    deepEqual(await snapshot(results), before);
    const json = await captureConsole(() => main(["gc", results, "--json"]));
    equal(JSON.parse(json.out).bytesFreed, 1324);
    ok(!(await exists(join(exp, R1, "phases", "split", "checkpoints"))));
  });
});

Deno.test("parity gc exits 2 on a usage error, an unknown experiment or a missing folder", async () => {
  await withTree(async ({ results, tmp }) => {
    equal((await captureConsole(() => main(["gc", "--bogus"]))).value, 2);
    equal((await captureConsole(() => main(["gc", results, "extra"]))).value, 2);
    const unknown = await captureConsole(() => main(["gc", results, "--experiment", "nope"]));
    equal(unknown.value, 2);
    match(unknown.err, /no experiment "nope"/);
    const missing = await captureConsole(() => main(["gc", join(tmp, "absent")]));
    equal(missing.value, 2);
    match(missing.err, /no folder/);
    await rejects(collectGarbage(join(tmp, "absent")), Deno.errors.NotFound);
  });
});

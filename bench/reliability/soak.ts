/**
 * The soak (docs/reliability.md, "Long-running use"): back-to-back quickstart runs in one results
 * folder, forced and cached alternately, then a suite of small experiments, all in this one
 * process, as a long CI job or a nightly suite would run them. After each run it samples the
 * process's open file descriptors and memory (heap after a full GC, and RSS); at the end it checks
 * history.csv holds exactly one row per run and that `parity gc` leaves exactly what the cached
 * phases need: a cached run afterwards reuses every phase, and one split and one universal
 * checkpoint remain.
 *
 *   deno task reliability:soak [--runs 200] [--suite 50] [--max-minutes M] [--results DIR] [--json FILE]
 *   deno task reliability:soak --samples FILE     # re-check the bounds on an earlier --json
 *
 * The suite runs first; `--max-minutes` stops the quickstart loop early (the figures then say how
 * many runs were made), so a loaded machine still yields every check.
 *
 * Exits 1 when a bound of docs/reliability.md is exceeded.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { join, resolve } from "node:path";
import { parse as parseCsv } from "csv-parse/sync";
import { readExperimentFile, resolvePlan } from "../../src/experiment/mod.ts";
import type { Experiment } from "../../src/experiment/mod.ts";
import { runExperiment } from "../../src/pipeline/running/runner.ts";
import type { Progress } from "../../src/pipeline/running/run_progress.ts";
import { collectGarbage } from "../../src/pipeline/store/gc.ts";
import { writeSuiteIndex } from "../../src/report/mod.ts";
import { leftovers, openFds, processesOf } from "../../test/_testing/leftovers.ts";

/**
 * Bounds (docs/reliability.md): per kind of run (suite, forced, cached), the mean of its last 10
 * samples against the mean of its 11th to 20th — a suite experiment and a quickstart differ in
 * working set, so each is compared with its own kind, after its own warm-up.
 */
const BOUNDS = { fds: 4, heapMiB: 32, rssMiB: 128 };
const WARM_UP = 10;

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "200" },
    suite: { type: "string", default: "50" },
    results: { type: "string" },
    json: { type: "string" },
    "max-minutes": { type: "string", default: "100000" },
    samples: { type: "string" },
  },
});
const deadline = Date.now() + Number(values["max-minutes"]) * 60_000;
interface Sample {
  run: number;
  kind: string;
  verdict: string;
  wall_s: number;
  fds: number;
  heap_mib: number;
  rss_mib: number;
}

/** Growth per kind of run: mean of the last 10 samples minus mean of samples 11-20. */
function growth(samples: Sample[]) {
  const out: Record<string, { runs: number; fds: number; heap_mib: number; rss_mib: number }> = {};
  for (const kind of new Set(samples.map((s) => s.kind))) {
    const of = samples.filter((s) => s.kind === kind);
    const early = of.slice(WARM_UP, 2 * WARM_UP);
    const late = of.slice(-WARM_UP);
    if (early.length === 0) continue;
    const mean = (xs: Sample[], key: "fds" | "heap_mib" | "rss_mib") =>
      xs.reduce((a, x) => a + x[key], 0) / xs.length;
    const delta = (key: "fds" | "heap_mib" | "rss_mib") =>
      Math.round((mean(late, key) - mean(early, key)) * 10) / 10;
    out[kind] = {
      runs: of.length,
      fds: delta("fds"),
      heap_mib: delta("heap_mib"),
      rss_mib: delta("rss_mib"),
    };
  }
  return out;
}

function growthFailures(g: ReturnType<typeof growth>): string[] {
  return Object.entries(g).flatMap(([kind, d]) => [
    d.fds > BOUNDS.fds ? `${kind}: open fds grew by ${d.fds}` : "",
    d.heap_mib > BOUNDS.heapMiB ? `${kind}: heap grew by ${d.heap_mib} MiB` : "",
    d.rss_mib > BOUNDS.rssMiB ? `${kind}: rss grew by ${d.rss_mib} MiB` : "",
  ]).filter((x) => x !== "");
}

if (values.samples) {
  // Re-checks the memory bounds on the samples of an earlier --json, without running anything.
  const stored: { samples: Sample[] } = JSON.parse(await Deno.readTextFile(values.samples));
  const g = growth(stored.samples);
  const failures = growthFailures(g);
  console.log(JSON.stringify({ growth: g, bounds: BOUNDS, failures }));
  Deno.exit(failures.length === 0 ? 0 : 1);
}

const PROJECT = resolve(import.meta.dirname!, "../..");
const results = resolve(values.results ?? await Deno.makeTempDir({ prefix: "parity-soak-" }));
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --v8-flags=--expose-gc (deno task reliability:soak does)");

const notes: string[] = [];
const silent: Progress = {
  runStart() {},
  phaseStart: () => ({ stop() {} }),
  followMetrics: () => ({ stop() {} }),
  phaseEnd() {},
  note: (text) => void notes.push(text),
  runEnd() {},
};

async function load(file: string, sets: string[] = []): Promise<Experiment> {
  const loaded = await readExperimentFile(file, { sets });
  if (!loaded.ok) throw new Error(`${file}: ${JSON.stringify(loaded.errors)}`);
  return loaded.experiments[0];
}

function run(exp: Experiment, force: boolean, baseDir: string) {
  const harnessEnv = Deno.env.toObject();
  const plan = resolvePlan(exp, { baseDir, harnessEnv });
  return runExperiment({ plan, experiment: exp }, {
    resultsDir: results,
    baseDir,
    experimentFile: null,
    only: [],
    keepGoing: true,
    force,
    progress: silent,
    harnessEnv,
  });
}

const samples: Sample[] = [];
function sample(runNo: number, kind: string, verdict: string, wallS: number) {
  gc!();
  const mem = Deno.memoryUsage();
  const s: Sample = {
    run: runNo,
    kind,
    verdict,
    wall_s: Math.round(wallS * 100) / 100,
    fds: openFds(),
    heap_mib: Math.round(mem.heapUsed / 2 ** 20 * 10) / 10,
    rss_mib: Math.round(mem.rss / 2 ** 20 * 10) / 10,
  };
  samples.push(s);
  if (runNo % 10 === 0 || runNo <= 2) {
    console.log(
      `${kind} #${runNo}: ${verdict} in ${s.wall_s} s; fds ${s.fds}, heap ${s.heap_mib} MiB, rss ${s.rss_mib} MiB`,
    );
  }
}

const quickstartFile = join(PROJECT, "experiments/quickstart.yaml");
// A suite of small experiments, one results folder, one suite index (as `run a.yaml b.yaml ...`).
const suiteSize = Number(values.suite);
const entries = [];
for (let i = 1; i <= suiteSize; i++) {
  const exp = await load(quickstartFile, [
    `name=soak-suite-${i}`,
    `seed=${1000 + i}`,
    "schedule.steps=4",
    "schedule.save_at=2",
    "resume={native: {from: native}}",
    "plan_sync=null",
  ]);
  const start = performance.now();
  const { runDir, summary } = await run(exp, false, join(PROJECT, "experiments"));
  entries.push({ experiment: summary.experiment, runDir, summary });
  sample(i, "suite", summary.verdict, (performance.now() - start) / 1000);
}
await writeSuiteIndex(results, entries);

const quickstart = await load(quickstartFile);
const t0 = performance.now();
const quickstartRuns: { id: string; comparisons: number }[] = [];
let runs = 0;
for (let i = 1; i <= Number(values.runs) && Date.now() < deadline; i++) {
  const force = i % 2 === 1; // the first run has nothing to reuse anyway
  const start = performance.now();
  const { summary } = await run(quickstart, force, join(PROJECT, "experiments"));
  quickstartRuns.push({ id: summary.run_id, comparisons: summary.comparisons.length });
  runs = i;
  sample(
    suiteSize + i,
    force ? "forced" : "cached",
    summary.verdict,
    (performance.now() - start) / 1000,
  );
}
const quickstartS = (performance.now() - t0) / 1000;

// history.csv: exactly one row per run.
const history = parseCsv(await Deno.readTextFile(join(results, "history.csv")), {
  columns: true,
}) as Record<string, string>[];
// history.csv has one row per comparison of a run: a run is recorded once when its run id
// appears with exactly its comparisons, no more, no fewer.
const recordedOnce = (runId: string, comparisons: number) =>
  history.filter((r) => r.run_id === runId).length === Math.max(1, comparisons);
const historyRuns = new Set(
  history.filter((r) => r.experiment === "quickstart").map((r) => r.run_id),
);
const quickstartRows = quickstartRuns.filter((r) => recordedOnce(r.id, r.comparisons)).length;
const suiteRows =
  entries.filter((e) => recordedOnce(e.summary.run_id, e.summary.comparisons.length)).length;

// gc keeps exactly what cached phases need.
const checkpointFolders = async () => {
  const found: string[] = [];
  for await (const run of Deno.readDir(join(results, "quickstart"))) {
    if (!run.isDirectory) continue;
    for (const sub of ["phases/split/checkpoints", "phases/convert/global_step20_universal"]) {
      const p = join(results, "quickstart", run.name, sub);
      if ((await Deno.lstat(p).catch(() => null))?.isDirectory) found.push(p);
    }
  }
  return found.sort();
};
const before = await checkpointFolders();
const report = await collectGarbage(results);
const after = await checkpointFolders();
const fdsBefore = openFds();
const { summary: afterGc } = await run(quickstart, false, join(PROJECT, "experiments"));
const allCached = afterGc.phases.every((p) => p.cached);
const left = await leftovers(results);
const orphans = await processesOf(results);

const memory = growth(samples);
const range = (key: "fds" | "heap_mib" | "rss_mib") => [
  Math.min(...samples.map((s) => s[key])),
  Math.max(...samples.map((s) => s[key])),
];
const figures = {
  quickstart_runs: runs,
  suite_experiments: suiteSize,
  quickstart_s: Math.round(quickstartS),
  verdicts: Object.fromEntries(
    [...new Set(samples.map((s) => s.verdict))].map((
      v,
    ) => [v, samples.filter((s) => s.verdict === v).length]),
  ),
  growth: memory,
  fds_range: range("fds"),
  heap_mib_range: range("heap_mib"),
  rss_mib_range: range("rss_mib"),
  history_runs_quickstart: historyRuns.size,
  history_rows_per_quickstart_run: quickstartRuns[0]?.comparisons,
  quickstart_runs_recorded_once: quickstartRows,
  suite_experiments_with_one_row: suiteRows,
  checkpoint_folders_before_gc: before.length,
  checkpoint_folders_after_gc: after.length,
  gc_bytes_freed: report.bytesFreed,
  cached_run_after_gc_reuses_all: allCached,
  cached_run_after_gc_verdict: afterGc.verdict,
  fds_after_final_run: openFds() - fdsBefore,
  locks_left: left.locks.length,
  tmp_left: left.tmp.length,
  orphans: orphans.length,
  bounds: BOUNDS,
  results,
};
const failures = [
  ...growthFailures(memory),
  (quickstartRows !== runs || historyRuns.size !== runs) && "history.csv quickstart rows",
  suiteRows !== suiteSize && "history.csv suite rows",
  after.length !== 2 && "gc left other than one split and one universal checkpoint",
  !allCached && "a phase ran again after gc",
  left.locks.length + left.tmp.length + orphans.length > 0 && "leftovers",
].filter(Boolean);
console.log(JSON.stringify(figures));
if (failures.length) console.log(`FAILED: ${failures.join("; ")}`);
if (values.json) {
  await Deno.writeTextFile(
    values.json,
    JSON.stringify({ figures, failures, samples, notes }, null, 2),
  );
}
if (!values.results && failures.length === 0) await Deno.remove(results, { recursive: true });
Deno.exit(failures.length === 0 ? 0 : 1);

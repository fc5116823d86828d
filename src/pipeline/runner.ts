/**
 * Runs one experiment: launches every phase of the graph as a supervised child, in dependency
 * order and at most `parallel` at a time, then judges the evidence and writes the results
 * folder (summary.json, losses.csv, reports, history, `latest`).
 *
 * @module
 */

import { join, relative } from "node:path";
import { stringify as toYaml } from "yaml";
import type { Experiment } from "../experiment/schema.ts";
import { evaluateRun, lossesCsv, type PhaseEvidence } from "../parity/mod.ts";
import { interruption, runChild } from "../process/mod.ts";
import { appendHistory, renderRun } from "../report/mod.ts";
import {
  type CacheHit,
  CHILD_PID_FILE,
  codeInputsDigest,
  codeInputsOf,
  findCachedPhase,
  keyedCommand,
  phaseCacheKey,
  quarantineIncomplete,
} from "./cache.ts";
import { metricsSource, type PhaseCommand, phaseCommand, type PhasePaths } from "./commands.ts";
import {
  gitState,
  HARNESS_VERSION,
  type Manifest,
  newManifest,
  recordChild,
  sha256Hex,
} from "./manifest.ts";
import { buildPhaseGraph, dependentsOf, type PhaseNode } from "./phases.ts";
import { checkpointMarker, missingArtifact, phasePaths, targetDocument } from "./artifacts.ts";
import { pruneOlderRuns, pruneRunCheckpoints } from "./gc.ts";
import { acquireRunLock } from "./lock.ts";
import { checkPlanFile } from "./plan_check.ts";
import { moveAttemptAside, shouldRetry } from "./retry.ts";
import type { Progress } from "./run_progress.ts";
import {
  assertInside,
  experimentFolderName,
  latestRunDir,
  newRunId,
  updateLatest,
  writeJsonAtomic,
  writeTextAtomic,
} from "./run_store.ts";
import {
  EXIT_CODES,
  type PhaseStatus,
  type PhaseSummary,
  type PlanSyncSummary,
  type RunSummary,
  type Verdict,
  worstVerdict,
} from "./summary.ts";

/** How to run an experiment. */
export interface RunOptions {
  /** Results root (`results/` by default). */
  resultsDir: string;
  /** Folder that relative paths in the experiment resolve against. */
  baseDir: string;
  /** The experiment file, for the manifest. */
  experimentFile: string | null;
  /** Phases to run (with what they consume); empty = all. */
  only: string[];
  /** After a failure, run every phase that does not depend on it. */
  keepGoing: boolean;
  /** Re-run every phase (`true`) or these phases and what depends on them. */
  force: boolean | string[];
  /** Wait for another run holding the experiment's lock instead of failing. */
  wait?: boolean;
  /** Progress sink. */
  progress: Progress;
  /** Environment visible to `${env.NAME}` placeholders. */
  harnessEnv: Record<string, string>;
}

/** Outcome of one experiment run. */
export interface RunResult {
  /** The run folder. */
  runDir: string;
  /** What was written to summary.json. */
  summary: RunSummary;
}

interface PhaseState {
  node: PhaseNode;
  status: PhaseStatus | "pending" | "running";
  /** Cache key, once computed. */
  key?: string;
  /** Must run even when a cached result exists. */
  forced: boolean;
  paths?: PhasePaths;
  summary?: PhaseSummary;
  plan?: PlanSyncSummary;
}

function selectPhases(nodes: PhaseNode[], only: string[]): Set<string> {
  if (only.length === 0) return new Set(nodes.map((n) => n.name));
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const keep = new Set<string>();
  const visit = (name: string) => {
    if (keep.has(name)) return;
    const node = byName.get(name);
    if (!node) {
      throw new Error(`--only ${name}: no such phase (phases: ${[...byName.keys()].join(", ")})`);
    }
    keep.add(name);
    node.consumes.forEach(visit);
  };
  only.forEach(visit);
  return keep;
}

/** Runs one experiment to completion (or interruption) and writes its results folder. */
export async function runExperiment(exp: Experiment, options: RunOptions): Promise<RunResult> {
  const experimentDir = join(options.resultsDir, experimentFolderName(exp.name));
  const progress = options.progress;
  const lock = await acquireRunLock(experimentDir, {
    wait: options.wait,
    onWait: (h) =>
      progress.note(`waiting for the run of PID ${h.pid} (started ${h.started_at}) to finish`),
    onTakeover: (h, reason) =>
      progress.note(`took over the lock of PID ${h.pid} (started ${h.started_at}): ${reason}`),
  });
  try {
    return await runLocked(exp, options, experimentDir);
  } finally {
    await lock.release();
  }
}

async function runLocked(
  exp: Experiment,
  options: RunOptions,
  experimentDir: string,
): Promise<RunResult> {
  const started = new Date();
  const git = gitState(); // two git processes: start them while the run folder is prepared
  const nodes = buildPhaseGraph(exp);
  const selected = selectPhases(nodes, options.only);
  const resolvedYaml = toYaml(exp);
  const runId = newRunId(started, resolvedYaml);
  const runDir = join(experimentDir, runId);
  assertInside(options.resultsDir, runDir);
  await Deno.mkdir(join(runDir, "phases"), { recursive: true });
  for (const note of await quarantineIncomplete(experimentDir, runDir)) options.progress.note(note);
  await writeTextAtomic(join(runDir, "experiment.resolved.yaml"), resolvedYaml);

  const hashes: Record<string, string> = {
    "experiment.resolved.yaml": await sha256Hex(resolvedYaml),
  };
  if (options.experimentFile) {
    try {
      hashes[options.experimentFile] = await sha256Hex(await Deno.readFile(options.experimentFile));
    } catch { /* a --set-only run may have no file on disk */ }
  }
  const { manifest, gitKnown } = newManifest(options.experimentFile, hashes, git);
  const manifestPath = join(runDir, "manifest.json");
  await writeJsonAtomic(manifestPath, manifest);

  const forced = forcedPhases(nodes, options.force);
  const states = new Map<string, PhaseState>(
    nodes.map((n) => [n.name, { node: n, status: "pending", forced: forced.has(n.name) }]),
  );
  const context: RunContext = {
    exp,
    nodes,
    selected,
    states,
    runDir,
    experimentDir,
    options,
    manifest,
    manifestPath,
    codeDigests: new Map(),
  };
  await computeKeys(context);
  const progress = options.progress;
  progress.runStart(exp.name, runDir, nodes.filter((n) => selected.has(n.name)).length);

  const skip = (name: string, message: string) => {
    const s = states.get(name)!;
    if (s.status !== "pending") return;
    s.status = "skipped";
    s.summary = {
      name,
      role: s.node.role,
      status: "skipped",
      cached: false,
      wall_s: 0,
      exit_code: null,
      message,
      consumes: s.node.consumes,
    };
  };

  let stopLaunching = false;
  const running = new Set<Promise<void>>();
  const parallel = Math.max(1, exp.parallel);

  const launch = async (state: PhaseState) => {
    state.status = "running";
    // With --only, a phase outside the selection is only looked up in the cache, never run, so
    // the selected phases are still compared with earlier results when there are any.
    await runPhase(state, context, !selected.has(state.node.name));
    const status = state.summary!.status;
    state.status = status;
    if (status === "skipped") {
      for (const dep of dependentsOf(nodes, state.node.name)) {
        skip(dep, `not run: it needs ${state.node.name}, which was not selected (--only)`);
      }
    } else if (status !== "ok") {
      for (const dep of dependentsOf(nodes, state.node.name)) {
        skip(
          dep,
          `not run: it needs ${state.node.name}, which ${
            status === "timeout" ? "timed out" : "failed"
          }`,
        );
      }
      if (!options.keepGoing) stopLaunching = true;
    }
  };

  for (;;) {
    if (interruption()) stopLaunching = true;
    if (!stopLaunching) {
      for (const state of states.values()) {
        if (running.size >= parallel) break;
        if (state.status !== "pending") continue;
        if (!state.node.consumes.every((c) => states.get(c)!.status === "ok")) continue;
        const p: Promise<void> = launch(state).finally(() => running.delete(p));
        running.add(p);
      }
    }
    if (running.size === 0) break;
    await Promise.race(running);
  }
  const interrupted = interruption();
  for (const state of states.values()) {
    if (state.status === "pending") {
      skip(
        state.node.name,
        interrupted
          ? `not run: the harness was interrupted (${interrupted.reason})`
          : "not run: an earlier phase failed (use --keep-going to run independent phases)",
      );
    }
  }

  await gitKnown;
  await writeJsonAtomic(manifestPath, manifest);

  // Judge the evidence.
  const phaseSummaries = nodes.map((n) => states.get(n.name)!.summary!);
  const evidence: PhaseEvidence[] = nodes
    .filter((n) => n.role !== "convert" && n.role !== "plan")
    .map((n) => {
      const s = states.get(n.name)!;
      const source = s.paths
        ? metricsSource(n, phaseVarsOf(exp, s, options), options.baseDir)
        : undefined;
      return {
        name: n.name,
        role: n.role,
        status: s.summary!.status,
        metricsPath: source?.path,
        metrics: source?.options,
        resumeKind: n.resumeKind,
        topology: n.topology,
        lane: n.lane,
      };
    });
  const gradAccum = typeof exp.trainer.args?.grad_accum === "number"
    ? exp.trainer.args.grad_accum
    : undefined;
  const evaluation = await evaluateRun({
    steps: exp.schedule.steps,
    saveAt: exp.schedule.save_at,
    gradAccum,
    metrics: exp.metrics,
    compare: exp.compare,
    tolerance: exp.tolerance,
    phases: evidence,
  });

  const planSync = nodes.flatMap((n) => {
    const p = states.get(n.name)!.plan;
    return p ? [p] : [];
  });
  const verdicts: Verdict[] = [evaluation.verdict];
  if (phaseSummaries.some((p) => p.status === "failed" || p.status === "timeout")) {
    verdicts.push("ERROR");
  }
  if (interrupted) verdicts.push("ERROR");
  if (planSync.some((p) => !p.verified)) verdicts.push("FAIL");
  const verdict = worstVerdict(verdicts);
  const finished = new Date();
  const summary: RunSummary = {
    schema_version: 1,
    harness_version: HARNESS_VERSION,
    experiment: exp.name,
    run_id: runId,
    started_at: started.toISOString(),
    finished_at: finished.toISOString(),
    verdict,
    exit_code: EXIT_CODES[verdict],
    wall_s: round3((finished.getTime() - started.getTime()) / 1000),
    children_wall_s: round3(phaseSummaries.reduce((a, p) => a + (p.cached ? 0 : p.wall_s), 0)),
    interrupted: interrupted !== null,
    steps: exp.schedule.steps,
    save_at: exp.schedule.save_at,
    phases: phaseSummaries,
    comparisons: evaluation.comparisons,
    state_checks: evaluation.state_checks,
    plan_sync: planSync,
    noise_floor: evaluation.noise_floor,
    diagnostics: evaluation.diagnostics,
    git_commit: manifest.git.commit,
  };
  if (interrupted) {
    summary.diagnostics.push({
      level: "error",
      code: "interrupted",
      message: `the harness was interrupted by ${interrupted.reason}; completed phases are kept`,
    });
  }

  await writeTextAtomic(join(runDir, "losses.csv"), lossesCsv(evaluation.series, "loss"));
  await writeJsonAtomic(join(runDir, "summary.json"), summary);
  try {
    await renderRun(runDir, { reuseFrom: await latestRunDir(experimentDir) });
  } catch (e) {
    // Reports are derived data: a rendering bug must not lose the verdict.
    progress.note(`warning: report rendering failed: ${e instanceof Error ? e.message : e}`);
  }
  await appendHistory(options.resultsDir, summary);
  await updateLatest(experimentDir, runId);
  if (exp.keep_checkpoints === "none") await pruneRunCheckpoints(runDir);
  if (exp.keep_checkpoints === "last") await pruneOlderRuns(experimentDir);
  progress.runEnd(exp.name, verdict, summary.wall_s, relative(Deno.cwd(), runDir) || runDir);
  return { runDir, summary };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function phaseVarsOf(exp: Experiment, s: PhaseState, options: RunOptions): Record<string, string> {
  return phaseCommand(exp, s.node, s.paths!, options.baseDir, options.harnessEnv).vars;
}

/** Everything a phase needs to know about its run. */
interface RunContext {
  exp: Experiment;
  /** The phase graph, in execution order. */
  nodes: PhaseNode[];
  /** Phases selected to run (all without --only). */
  selected: Set<string>;
  states: Map<string, PhaseState>;
  runDir: string;
  experimentDir: string;
  options: RunOptions;
  manifest: Manifest;
  manifestPath: string;
  /** Code-input digests by tool, computed once per run. */
  codeDigests: Map<string, Promise<string>>;
}

/** `--force`: every phase, or the named ones and everything that depends on them. */
function forcedPhases(nodes: PhaseNode[], force: boolean | string[]): Set<string> {
  if (force === true) return new Set(nodes.map((n) => n.name));
  if (force === false) return new Set();
  const names = new Set(nodes.map((n) => n.name));
  const out = new Set<string>();
  for (const name of force) {
    if (!names.has(name)) {
      throw new Error(`--force ${name}: no such phase (phases: ${[...names].join(", ")})`);
    }
    out.add(name);
    for (const d of dependentsOf(nodes, name)) out.add(d);
  }
  return out;
}

/**
 * Computes every phase's cache key before anything runs. Keys never depend on where artifacts
 * are (paths are abstracted), so the planned layout of this run folder gives the same keys as
 * the real one, and consumers' keys are known before their producers run.
 */
async function computeKeys(ctx: RunContext): Promise<void> {
  for (const node of ctx.nodes) {
    const state = ctx.states.get(node.name)!;
    state.paths = await phasePaths(
      ctx.exp,
      node,
      (name) => ctx.states.get(name)?.paths,
      ctx.runDir,
    );
    const cmd = phaseCommand(
      ctx.exp,
      node,
      state.paths,
      ctx.options.baseDir,
      ctx.options.harnessEnv,
    );
    state.key = await computeKey(state, ctx, cmd);
  }
  for (const state of ctx.states.values()) state.paths = undefined;
}

/**
 * Whether every phase consuming `name` will be reused without reading its output: each is
 * cached (and, if itself a producer with pruned artifacts, covered in turn), or is outside an
 * `--only` selection. A forced consumer needs the output.
 */
async function consumersCovered(name: string, ctx: RunContext): Promise<boolean> {
  for (const consumer of ctx.nodes.filter((n) => n.consumes.includes(name))) {
    const state = ctx.states.get(consumer.name)!;
    const selected = ctx.selected.has(consumer.name);
    if (state.forced && selected) return false;
    const hit = await findCachedPhase(ctx.experimentDir, consumer.name, state.key!, ctx.runDir);
    if (!hit) {
      if (selected) return false;
      continue;
    }
    if (hit.artifactsMissing && !(await consumersCovered(consumer.name, ctx))) return false;
  }
  return true;
}

async function computeKey(state: PhaseState, ctx: RunContext, cmd: PhaseCommand): Promise<string> {
  const node = state.node;
  const inputs = codeInputsOf(node);
  // Keyed by the inputs alone: the trainer, converter and planner of a preset share their code.
  const digestKey = inputs.join("\0");
  if (!ctx.codeDigests.has(digestKey)) {
    ctx.codeDigests.set(
      digestKey,
      codeInputsDigest(inputs, ctx.options.baseDir, ctx.options.harnessEnv),
    );
  }
  const keyed = keyedCommand(cmd.argv, cmd.env, cmd.vars);
  const consumed = node.consumes.map((c) => ctx.states.get(c)!.key ?? "");
  return await phaseCacheKey(
    node,
    keyed.argv,
    keyed.env,
    consumed,
    await ctx.codeDigests.get(digestKey)!,
  );
}

/** Reuses an earlier completed phase: links its files into this run and points at its artifacts. */
async function reusePhase(
  state: PhaseState,
  ctx: RunContext,
  hit: CacheHit,
  key: string,
): Promise<void> {
  const node = state.node;
  const dir = join(ctx.runDir, "phases", node.name);
  await Deno.mkdir(dir, { recursive: true });
  for (const file of ["metrics.jsonl", "stdout.log", "stderr.log"]) {
    try {
      await Deno.symlink(join(hit.phaseDir, file), join(dir, file));
    } catch { /* a phase without that file */ }
  }
  const o = hit.record.outputs ?? {};
  state.paths = {
    dir: hit.phaseDir,
    metricsFile: o.metrics ?? join(hit.phaseDir, "metrics.jsonl"),
    checkpointDir: o.checkpoint_dir,
    universal: o.universal,
    planOut: o.plan,
  };
  let status: PhaseStatus = "ok";
  let message: string | undefined;
  if (node.role === "plan") {
    state.plan = await checkPlanFile(node.name, node.policy!, o.plan!);
    if (!state.plan.verified) {
      status = "failed";
      message = `plan rejected by the verifier: ${state.plan.error}`;
    }
  }
  state.key = key;
  state.summary = {
    name: node.name,
    role: node.role,
    status,
    cached: true,
    wall_s: 0,
    exit_code: hit.record.exit_code,
    cache_key: key,
    consumes: node.consumes,
    source_run: hit.runDir,
    ...(message ? { message } : {}),
  };
  await writeJsonAtomic(join(dir, "phase.json"), {
    ...state.summary,
    reused_wall_s: hit.record.wall_s,
    outputs: { ...o, dir: hit.phaseDir },
  });
  ctx.options.progress.phaseEnd(
    node.name,
    status,
    0,
    message ??
      `cached from ${hit.runDir}${
        hit.artifactsMissing ? " (its pruned output is not needed)" : ""
      }`,
  );
}

async function runPhase(state: PhaseState, ctx: RunContext, cacheOnly: boolean): Promise<void> {
  const { exp, states, runDir, options, manifest, manifestPath } = ctx;
  const node = state.node;
  const paths = await phasePaths(exp, node, (name) => states.get(name)?.paths, runDir);
  const cmd = phaseCommand(exp, node, paths, options.baseDir, options.harnessEnv);
  const key = state.key!;
  if (!state.forced || cacheOnly) {
    const hit = await findCachedPhase(ctx.experimentDir, node.name, key, runDir);
    // A producer whose checkpoint was pruned is reused only when no phase will read it.
    if (hit && (!hit.artifactsMissing || (await consumersCovered(node.name, ctx)))) {
      return await reusePhase(state, ctx, hit, key);
    }
  }
  if (cacheOnly) {
    state.summary = {
      name: node.name,
      role: node.role,
      status: "skipped",
      cached: false,
      wall_s: 0,
      exit_code: null,
      message: "not selected (--only) and no earlier result to reuse",
      consumes: node.consumes,
    };
    return;
  }
  state.paths = paths;
  await Deno.mkdir(paths.dir, { recursive: true });
  recordChild(manifest, node.name, cmd.argv, cmd.env, cmd.cwd);
  await writeJsonAtomic(manifestPath, manifest);

  const startedAt = new Date();
  const progress = options.progress;
  const retries: { attempt: number; matched: string; message: string }[] = [];
  let attempt = 1;
  let result;
  for (;;) {
    if (paths.target) await writeJsonAtomic(paths.target, targetDocument(node));
    const follow = node.tool === "trainer"
      ? progress.followMetrics(node.name, paths.metricsFile, node.stopAt)
      : progress.phaseStart(node.name);
    result = await runChild({
      argv: cmd.argv,
      env: cmd.env,
      cwd: cmd.cwd,
      timeoutMs: cmd.timeoutS * 1000,
      stdoutPath: join(paths.dir, "stdout.log"),
      stderrPath: join(paths.dir, "stderr.log"),
      // Lets a later run reap this group if the harness dies without stopping it.
      onSpawn: (pid) => Deno.writeTextFileSync(join(paths.dir, CHILD_PID_FILE), `${pid}\n`),
    });
    await follow.stop();
    const status = result.status === "ok"
      ? "ok"
      : result.status === "timeout"
      ? "timeout"
      : "failed";
    const decision = result.status === "interrupted"
      ? { retry: false }
      : shouldRetry(node.entry.retry, attempt, status, result.logTail);
    if (!decision.retry) break;
    const aside = await moveAttemptAside(paths.dir, attempt);
    retries.push({ attempt, matched: decision.matched!, message: result.message });
    progress.phaseEnd(
      node.name,
      status,
      result.wallS,
      `${result.message}; retrying (log matched ${decision.matched}, attempt kept in ${aside})`,
    );
    attempt++;
  }
  let status: PhaseStatus = result.status === "ok"
    ? "ok"
    : result.status === "timeout"
    ? "timeout"
    : "failed";
  let message = result.status === "interrupted"
    ? `interrupted by ${interruption()?.reason ?? "a signal"}`
    : result.message;
  if (status === "ok") {
    const missing = await missingArtifact(node, paths, exp.schedule.save_at);
    if (missing) {
      status = "failed";
      message = missing;
    }
  }
  if (status === "ok" && node.role === "plan") {
    state.plan = await checkPlanFile(node.name, node.policy!, paths.planOut!);
    if (!state.plan.verified) {
      status = "failed";
      message = `plan rejected by the verifier: ${state.plan.error}`;
    }
  }
  const summary: PhaseSummary = {
    name: node.name,
    role: node.role,
    status,
    cached: false,
    wall_s: round3(result.wallS),
    exit_code: result.exitCode,
    cache_key: key,
    consumes: node.consumes,
    attempts: attempt,
    ...(retries.length > 0 ? { retries } : {}),
  };
  if (status !== "ok") {
    summary.message = message;
    summary.log_tail = result.logTail;
  }
  state.summary = summary;
  await writeJsonAtomic(join(paths.dir, "phase.json"), {
    ...summary,
    signal: result.signal,
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    argv: cmd.argv,
    cwd: cmd.cwd,
    topology: JSON.parse(node.topology),
    outputs: {
      dir: paths.dir,
      metrics: paths.metricsFile,
      checkpoint_dir: paths.checkpointDir,
      checkpoint_marker: node.role === "split" ? checkpointMarker(node) : undefined,
      universal: paths.universal,
      plan: paths.planOut,
    },
  });
  progress.phaseEnd(node.name, status, summary.wall_s, message);
}

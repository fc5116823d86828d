/**
 * Runs one experiment: launches every phase of the graph as a supervised child, in dependency
 * order and at most `parallel` at a time, then judges the evidence and writes the results
 * folder (summary.json, losses.csv, reports, history, `latest`).
 *
 * @module
 */

import { join, relative, resolve } from "node:path";
import { stringify as toYaml } from "yaml";
import { dependentsOf, type Experiment } from "../../experiment/mod.ts";
import {
  assembleEvidence,
  cardLines,
  causeLine,
  type CheckpointFilesEvidence,
  CONSOLE_WARNINGS,
  judge,
  judgeReportFailure,
  lossesCsv,
  type PhaseOutcome,
  type RunEvidence,
  type RunOutcomes,
} from "../../parity/mod.ts";
import { HARNESS_REDACTION, interruption, writeTextAtomic } from "../../process/mod.ts";
import { appendHistory, renderRun } from "../../report/mod.ts";
import {
  DEFAULT_GOLDENS_DIR,
  describeEnvironmentError,
  type JudgeSettings,
  type JudgeSpec,
  type PhaseSpec,
  type PhaseStatus,
  placePlan,
  PLAN_FILE,
  type ResolvedPlan,
  type RunSummary,
} from "../../types/mod.ts";
import {
  acquireRunLock,
  assertInside,
  type CheckpointVerifyMode,
  type CodeDigests,
  collectEnvironment,
  computeKeys,
  type EnvironmentFacts,
  experimentFolderName,
  gitState,
  HARNESS_VERSION,
  latestRunDir,
  learnRunSecrets,
  listRuns,
  listSuiteRuns,
  type Manifest,
  newManifest,
  newRunId,
  pruneOlderRuns,
  pruneRunCheckpoints,
  quarantineIncomplete,
  redactedExperiment,
  redactedPlan,
  removeStrayTemporaries,
  sha256Hex,
  updateLatest,
  writeJsonAtomic,
  writeJsonInTurn,
} from "../store/mod.ts";
import { splitTagWarnings } from "./split_tags.ts";
import { readGoldenFacts } from "./golden.ts";
import { executePhase } from "./phase_execution.ts";
import type { PhaseContext, PhaseState } from "./phase_state.ts";
import { readPlanExecutions } from "./plan_execution_check.ts";
import { LaunchGate } from "./launch_gate.ts";
import { deviceEnv, DevicePool } from "./device_pool.ts";
import { billLine, runBill } from "./run_bill.ts";
import { launchOrder } from "./launch_order.ts";
import { importBundle, type ImportResult } from "../offline/mod.ts";
import type { Progress, RunCard } from "./run_progress.ts";

/** How to run an experiment. */
export interface RunOptions {
  /** Results root (`results/` by default). */
  resultsDir: string;
  /**
   * The results folder as the user gave it (`--results`): run folders are shown under it, so an
   * absolute one stays absolute and a relative one relative. Absent: relative to the working
   * folder.
   */
  resultsShown?: string;
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
  /** Where goldens are looked up (`experiments/goldens` under the working folder by default). */
  goldensDir?: string;
  /** The results folder's published URL, for absolute links in report.md (`--image-base-url`). */
  imageBaseUrl?: string;
  /** Re-hash every reused checkpoint, however large (`--verify-checkpoints`; default `auto`). */
  verifyCheckpoints?: CheckpointVerifyMode;
  /**
   * Launch nothing (`--no-launch`): every phase is looked up in the cache, and a phase that ended
   * failed in an earlier run with the same key (an imported offline run) is judged as failed.
   */
  noLaunch?: boolean;
  /** An offline bundle to import as an earlier run first (`--import`; implies `noLaunch`). */
  importBundle?: string;
}

/**
 * A path inside the results folder as the console shows it: under the results folder as the user
 * gave it (`/abs/results/x/run` for `--results /abs/results`, `results/x/run` for the default),
 * never a `../..` path relative to the working folder.
 */
export function shownPath(
  options: Pick<RunOptions, "resultsDir" | "resultsShown">,
  path: string,
): string {
  if (options.resultsShown === undefined) return relative(Deno.cwd(), path) || path;
  return join(options.resultsShown, relative(options.resultsDir, path));
}

/** Outcome of one experiment run. */
export interface RunResult {
  /** The run folder. */
  runDir: string;
  /** What was written to summary.json. */
  summary: RunSummary;
}

function selectPhases(specs: readonly PhaseSpec[], only: string[]): Set<string> {
  if (only.length === 0) return new Set(specs.map((s) => s.name));
  const byName = new Map(specs.map((s) => [s.name, s]));
  const keep = new Set<string>();
  const visit = (name: string) => {
    if (keep.has(name)) return;
    const spec = byName.get(name);
    if (!spec) {
      throw new Error(`--only ${name}: no such phase (phases: ${[...byName.keys()].join(", ")})`);
    }
    keep.add(name);
    spec.consumes.forEach(visit);
  };
  only.forEach(visit);
  return keep;
}

/** What a run executes: the plan, resolved once, and the experiment it was resolved from. */
export interface PlannedRun {
  /** The resolved plan, its run-folder paths not yet placed (`resolvePlan` without `runDir`). */
  plan: ResolvedPlan;
  /**
   * The experiment the plan was resolved from: only recorded (redacted, as
   * `experiment.resolved.yaml`), scanned for the secrets it references and salting the run id;
   * nothing is run or judged from it.
   */
  experiment: Experiment;
}

/** Runs one resolved plan to completion (or interruption) and writes its results folder. */
export async function runExperiment(run: PlannedRun, options: RunOptions): Promise<RunResult> {
  const experimentDir = join(options.resultsDir, experimentFolderName(run.plan.experiment));
  const progress = options.progress;
  const lock = await acquireRunLock(experimentDir, {
    wait: options.wait,
    onWait: (h) =>
      progress.note(`waiting for the run of PID ${h.pid} (started ${h.started_at}) to finish`),
    onTakeover: (h, reason) =>
      progress.note(`took over the lock of PID ${h.pid} (started ${h.started_at}): ${reason}`),
  });
  try {
    let imported: ImportResult | undefined;
    if (options.importBundle) {
      imported = await importBundle(run.plan, {
        bundleDir: resolve(options.importBundle),
        experimentDir,
        baseDir: options.baseDir,
        harnessEnv: options.harnessEnv,
      });
      for (const note of imported.notes) progress.note(note);
    }
    return await runLocked(run, options, experimentDir, imported);
  } finally {
    await lock.release();
  }
}

async function runLocked(
  run: PlannedRun,
  options: RunOptions,
  experimentDir: string,
  imported: ImportResult | undefined,
): Promise<RunResult> {
  const exp = run.experiment;
  const started = new Date();
  // Scanned for `${env.NAME}` and salts the run id; the YAML is only written, redacted, below.
  const resolvedText = JSON.stringify(exp);
  const runId = newRunId(started, resolvedText);
  const runDir = join(experimentDir, runId);
  assertInside(options.resultsDir, runDir);
  const plan = placePlan(run.plan, runDir);
  plan.warnings.push(...imported?.warnings ?? []);
  learnRunSecrets(exp, plan.phases, options.harnessEnv);
  const noLaunch = options.noLaunch || options.importBundle !== undefined;
  // Nothing selected: every phase is looked up in the cache only, as outside an --only selection.
  const selected = noLaunch ? new Set<string>() : selectPhases(plan.phases, options.only);
  const forced = forcedPhases(plan.phases, options.force);
  const progress = options.progress;

  await Deno.mkdir(join(runDir, "phases"), { recursive: true });
  // The code is digested while the run folder is prepared; the manifest reuses the digests.
  const digests: CodeDigests = new Map();
  const keysReady = computeKeys(plan.phases, options.baseDir, options.harnessEnv, digests);
  keysReady.catch(() => {}); // awaited below
  const allEarlier = await tidyEarlierRuns(experimentDir, runDir, progress);
  // An imported bundle is judged as it came back: no other earlier run stands in for its phases.
  const earlierRuns = imported ? [imported.runDir] : allEarlier;
  const suiteRuns = imported ? [] : await listSuiteRuns(options.resultsDir, experimentDir);
  const manifestPath = join(runDir, "manifest.json");
  const unknownGit = Promise.withResolvers<Manifest["git"]>();
  const hashes: Record<string, string> = {};
  const { manifest, gitKnown } = newManifest(options.experimentFile, hashes, unknownGit.promise);
  manifest.base_dir = options.baseDir;
  if (imported?.ranOn) manifest.ran_offline = { ...imported.ranOn };
  const states = phaseStates(plan.phases, await keysReady, forced);
  const ctx = newPhaseContext(options, { experimentDir, runDir, earlierRuns, suiteRuns }, {
    manifest,
    manifestPath,
    states,
    noLaunch,
  });
  announceRun(options, plan, runDir, noLaunch ? plan.phases.length : selected.size);
  const recorded = recordOnceLaunched(ctx, run, plan, {
    resolvedText,
    digests,
    hashes,
    experimentFile: options.experimentFile,
    resolveGit: unknownGit.resolve,
  });
  recorded.catch(() => {}); // awaited after the phases
  let manifestWritten: Promise<void> | undefined;
  try {
    // Nothing launches: a failed phase cannot stop an independent one from being judged.
    const interrupted = await schedulePhases(plan, ctx, selected, options.keepGoing || noLaunch);
    const facts = await recorded;
    await gitKnown;
    // The final manifest is written while the evidence is judged.
    manifestWritten = writeJsonInTurn(manifestPath, manifest);
    manifestWritten.catch(() => {}); // awaited below

    const judged = await summarizeRun(plan, [...states.values()], {
      runId,
      started,
      interrupted,
      gitCommit: manifest.git.commit,
      config: hashes["experiment.resolved.yaml"]?.slice(0, CONFIG_HEX),
      golden: plan.judge.golden
        ? { facts, goldensDir: options.goldensDir ?? resolve(DEFAULT_GOLDENS_DIR) }
        : undefined,
    });
    // The completion markers are written while the evidence is judged, which does not read them.
    await Promise.all([...states.values()].map((s) => s.completion));
    await manifestWritten;
    const published = await publishRun(plan, judged, options, experimentDir);
    return { runDir, summary: published };
  } finally {
    // Every write still in flight ends (done, or failed and cleaned up) before an error leaves
    // the run: a process exiting mid-write would leave a *.tmp behind (a full disk).
    await Promise.allSettled([
      recorded,
      manifestWritten,
      ...[...states.values()].map((s) => s.completion),
    ]);
  }
}

/** Where a run's phases look: its own folder, the earlier runs and the suite's runs. */
type RunFolders = Pick<PhaseContext, "experimentDir" | "runDir" | "earlierRuns" | "suiteRuns">;

/** The context every phase of a run shares; the rest comes from the options. */
function newPhaseContext(
  options: RunOptions,
  folders: RunFolders,
  run: Pick<PhaseContext, "manifest" | "manifestPath" | "states" | "noLaunch">,
): PhaseContext {
  return {
    ...folders,
    baseDir: options.baseDir,
    harnessEnv: options.harnessEnv,
    manifest: run.manifest,
    manifestPath: run.manifestPath,
    progress: options.progress,
    states: run.states,
    verifyCheckpoints: options.verifyCheckpoints ?? "auto",
    gate: new LaunchGate(),
    noLaunch: run.noLaunch,
  };
}

/** Tells the progress the run starts (with how many phases it may launch) and its warnings. */
function announceRun(options: RunOptions, plan: ResolvedPlan, runDir: string, phases: number) {
  const progress = options.progress;
  progress.runStart(plan.experiment, shownPath(options, runDir), phases);
  for (const warning of plan.warnings) progress.note(`${warning.level}: ${warning.message}`);
}

/**
 * Quarantines earlier runs left incomplete and removes stray temporaries, noting each; returns
 * the earlier run folders (all but this run's).
 */
async function tidyEarlierRuns(
  experimentDir: string,
  runDir: string,
  progress: Progress,
): Promise<string[]> {
  const allEarlier = (await listRuns(experimentDir)).filter((run) => run !== runDir);
  for (const note of await quarantineIncomplete(experimentDir, allEarlier)) progress.note(note);
  for (const note of await removeStrayTemporaries(experimentDir, allEarlier)) progress.note(note);
  return allEarlier;
}

/** Each phase's starting state: pending, keyed, forced or not. */
function phaseStates(
  phases: readonly PhaseSpec[],
  keys: Map<string, string>,
  forced: Set<string>,
): Map<string, PhaseState> {
  return new Map<string, PhaseState>(phases.map((spec) => [spec.name, {
    spec,
    status: "pending",
    key: keys.get(spec.name)!,
    forced: forced.has(spec.name),
    present: false,
  }]));
}

/** What {@link recordOnceLaunched} writes besides the context's manifest. */
interface RunRecord {
  resolvedText: string;
  digests: CodeDigests;
  /** Filled with the input hashes once the resolved experiment is written. */
  hashes: Record<string, string>;
  experimentFile: string | null;
  resolveGit: (git: Promise<Manifest["git"]>) => void;
}

/**
 * Records the run (the redacted experiment, input hashes, git, python, nvidia-smi) and resolves to
 * the environment facts. Only once the first children run, not before them: recording must not
 * delay the launch.
 */
function recordOnceLaunched(
  ctx: PhaseContext,
  run: PlannedRun,
  plan: ResolvedPlan,
  record: RunRecord,
): Promise<EnvironmentFacts> {
  const { runDir, manifest } = ctx;
  return ctx.gate.settled().then(async () => {
    record.resolveGit(gitState());
    const environment = collectEnvironment(
      plan.phases,
      record.resolvedText,
      ctx.baseDir,
      ctx.harnessEnv,
      record.digests,
    ).then((facts) => (manifest.environment = facts));
    environment.catch(() => {}); // awaited below
    Object.assign(
      record.hashes,
      await writeResolvedExperiment(runDir, run.experiment, record.experimentFile),
    );
    await writePlan(runDir, run.plan, plan.warnings);
    await writeJsonInTurn(ctx.manifestPath, manifest);
    return await environment;
  });
}

/**
 * Writes the redacted `experiment.resolved.yaml` and returns the manifest's input hashes: it and
 * the experiment file (when on disk).
 */
async function writeResolvedExperiment(
  runDir: string,
  exp: Experiment,
  experimentFile: string | null,
): Promise<Record<string, string>> {
  const yaml = toYaml(redactedExperiment(exp));
  await writeTextAtomic(join(runDir, "experiment.resolved.yaml"), yaml);
  const hashes: Record<string, string> = { "experiment.resolved.yaml": await sha256Hex(yaml) };
  if (experimentFile) {
    try {
      hashes[experimentFile] = await sha256Hex(await Deno.readFile(experimentFile));
    } catch { /* a --set-only run may have no file on disk */ }
  }
  return hashes;
}

/**
 * Writes the plan the run executes, redacted like every results file, as `plan.json`: its
 * run-folder paths relative (`RUN_FOLDER`), so rerun, goldens and reports read it wherever the
 * run folder is.
 */
async function writePlan(
  runDir: string,
  plan: ResolvedPlan,
  warnings: ResolvedPlan["warnings"],
): Promise<void> {
  const text = JSON.stringify(redactedPlan({ ...plan, warnings }), null, 2);
  await writeTextAtomic(join(runDir, PLAN_FILE), `${text}\n`);
}

/**
 * Launches pending phases whose producers ended ok, at most `plan.parallel` at a time (with a
 * device pool: while its devices last, longest remaining chain first), until none is left or the
 * harness is interrupted; a failed phase skips what depends on it (and, without `keepGoing`,
 * stops launching; with a pool, every phase after it in plan order). Returns the interruption.
 */
async function schedulePhases(
  plan: ResolvedPlan,
  ctx: PhaseContext,
  selected: Set<string>,
  keepGoing: boolean,
): Promise<ReturnType<typeof interruption>> {
  const { states } = ctx;
  const skip = (name: string, message: string) => skipPhase(states, name, message);
  let stopLaunching = false;
  const running = new Set<Promise<void>>();
  // Phases holding a slot: a plan phase frees its own once its child is done, while it is verified.
  const holding = new Set<string>();
  let freed = Promise.withResolvers<void>();
  const parallel = Math.max(1, plan.parallel);
  // With a device pool, free devices bound what runs at once instead of `parallel`.
  const pool = plan.devices ? new DevicePool(plan.devices) : undefined;
  const taken = new Map<string, number[]>();
  // A pool runs phases side by side: the critical path goes first. Without one, plan order.
  const planIndex = new Map(plan.phases.map((s, i) => [s.name, i]));
  let firstFailed = Infinity;
  const order = pool ? launchOrder(plan.phases, plan.judge.saveAt) : plan.phases.map((s) => s.name);
  const release = (name: string) => {
    const ids = taken.get(name);
    if (ids) pool!.give(ids);
    taken.delete(name);
    if (holding.delete(name)) freed.resolve();
  };
  const launch = async (state: PhaseState) => {
    const name = state.spec.name;
    state.status = "running";
    holding.add(name);
    ctx.gate.begin(name);
    const hooks = { started: () => ctx.gate.end(name), released: () => release(name) };
    try {
      // With --only, a phase outside the selection is only looked up in the cache, never run,
      // so the selected phases are still compared with earlier results when there are any.
      await executePhase(state, ctx, selected, hooks);
    } finally {
      ctx.gate.end(name);
      release(name);
    }
    // A completion marker that cannot be written (a full disk) stops the run like a failure.
    state.completion?.catch(() => stopLaunching = true);
    const status = state.summary!.status;
    state.status = status;
    if (status === "ok") return;
    const why = whyNotOk(status, ctx.noLaunch);
    for (const dep of dependentsOf(plan.phases, state.spec.name)) {
      skip(dep, `not run: it needs ${state.spec.name}, ${why}`);
    }
    if (status !== "skipped" && !keepGoing) {
      // With a pool, the phases before it in plan order still run, as they would have one at a
      // time: which phases are judged must not depend on which one a pool happened to start first.
      if (pool) firstFailed = Math.min(firstFailed, planIndex.get(name)!);
      else stopLaunching = true;
    }
  };
  for (;;) {
    if (interruption()) stopLaunching = true;
    if (!stopLaunching) {
      for (const name of order) {
        const state = states.get(name)!;
        if (!pool && holding.size >= parallel) break;
        if (state.status !== "pending") continue;
        if (planIndex.get(name)! > firstFailed) continue;
        if (!state.spec.consumes.every((c) => states.get(c)!.status === "ok")) continue;
        if (pool && !takeDevices(pool, state, taken)) continue;
        const p: Promise<void> = launch(state).finally(() => running.delete(p));
        running.add(p);
      }
    }
    if (running.size === 0) break;
    await Promise.race([freed.promise, ...running]);
    freed = Promise.withResolvers();
  }
  const interrupted = interruption();
  for (const state of states.values()) {
    skip(
      state.spec.name,
      interrupted
        ? `not run: the harness was interrupted (${interrupted.reason})`
        : "not run: an earlier phase failed (use --keep-going to run independent phases)",
    );
  }
  return interrupted;
}

/** Marks a still-pending phase skipped, with the message its summary shows. */
function skipPhase(states: Map<string, PhaseState>, name: string, message: string): void {
  const s = states.get(name)!;
  if (s.status !== "pending") return;
  s.status = "skipped";
  s.summary = {
    name,
    role: s.spec.role,
    status: "skipped",
    cached: false,
    wall_s: 0,
    exit_code: null,
    message,
    consumes: s.spec.consumes,
  };
}

/** The clause that tells a dependent why its producer did not end ok. */
function whyNotOk(status: PhaseStatus, noLaunch: boolean | undefined): string {
  return status === "skipped"
    ? noLaunch ? "which was not reused (--no-launch)" : "which was not selected (--only)"
    : status === "timeout"
    ? "which timed out"
    : "which failed";
}

/** Hex digits of `experiment.resolved.yaml`'s SHA-256 that name a run's configuration. */
const CONFIG_HEX = 16;

/**
 * Takes a pending phase's devices from the pool, or returns false while too few are free. The
 * phase's environment gets them (`deviceEnv`); its cache key does not change, since which
 * devices a phase runs on must not change what it computes.
 */
function takeDevices(pool: DevicePool, state: PhaseState, taken: Map<string, number[]>): boolean {
  const ids = pool.take(state.spec.devices ?? 0);
  if (!ids) return false;
  taken.set(state.spec.name, ids);
  state.devices = { kind: pool.kind, ids };
  const ranks = state.spec.tool === "trainer" ? Math.max(1, state.spec.devices ?? 1) : 1;
  state.spec = { ...state.spec, env: { ...state.spec.env, ...deviceEnv(pool.kind, ids, ranks) } };
  return true;
}

/** A run's summary, the evidence it was judged on and its `losses.csv`. */
interface JudgedRun {
  /** What summary.json says (before redaction). */
  summary: RunSummary;
  /** The evidence the judge weighed; publishing may add report failures and judge again. */
  evidence: RunEvidence;
  /** `losses.csv`. */
  losses: string;
}

/** Reads what the run observed, has parity assemble and judge it and builds the run's summary. */
async function summarizeRun(
  plan: ResolvedPlan,
  states: PhaseState[],
  run: {
    runId: string;
    started: Date;
    interrupted: ReturnType<typeof interruption>;
    gitCommit: string | null;
    config?: string;
    golden?: { facts: EnvironmentFacts; goldensDir: string };
  },
): Promise<JudgedRun> {
  const phaseSummaries = states.map((s) => s.summary!);
  const { evidence, series } = await assembleEvidence(plan, await readOutcomes(plan, states, run));
  const judgement = judge(evidence);
  const finished = new Date();
  const wallS = round3((finished.getTime() - run.started.getTime()) / 1000);
  const summary: RunSummary = {
    schema_version: 1,
    harness_version: HARNESS_VERSION,
    experiment: plan.experiment,
    run_id: run.runId,
    started_at: run.started.toISOString(),
    finished_at: finished.toISOString(),
    verdict: judgement.verdict,
    exit_code: judgement.exit_code,
    wall_s: wallS,
    children_wall_s: round3(phaseSummaries.reduce((a, p) => a + (p.cached ? 0 : p.wall_s), 0)),
    bill: runBill(plan.phases, phaseSummaries, plan.judge.saveAt, wallS),
    interrupted: run.interrupted !== null,
    steps: plan.judge.steps,
    save_at: plan.judge.saveAt,
    ...(plan.judge.saveSteps.length > 1 ? { save_steps: plan.judge.saveSteps } : {}),
    phases: phaseSummaries,
    comparisons: judgement.comparisons,
    state_checks: judgement.state_checks,
    plan_sync: judgement.plan_sync,
    noise_floor: judgement.noise_floor,
    diagnostics: judgement.diagnostics,
    git_commit: run.gitCommit,
    ...(run.config ? { config: run.config } : {}),
    ...(evidence.golden ? { golden: evidence.golden.summary } : {}),
    findings: judgement.findings,
    judge: judgeSettings(plan.judge),
    charts: plan.charts,
  };
  return { summary, evidence, losses: lossesCsv(series, "loss") };
}

/** The settings part of the plan's judge spec, as summary.json persists it (`judge`). */
function judgeSettings(
  { steps: _steps, saveAt: _saveAt, saveSteps: _saveSteps, ...settings }: JudgeSpec,
): JudgeSettings {
  return settings;
}

/** A JSON object file (a checkpoint reader's record), or undefined when absent or malformed. */
async function readJsonIfPresent(path: string): Promise<CheckpointFilesEvidence | undefined> {
  try {
    const value = JSON.parse(await Deno.readTextFile(path));
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads what the run observed for parity's {@link assembleEvidence}: every phase as it ended with
 * the checkpoint folders the harness read back, the split's checkpoint tags, the golden of this
 * environment and the plan-execute documents. Decides nothing.
 */
async function readOutcomes(
  plan: ResolvedPlan,
  states: PhaseState[],
  run: {
    interrupted: ReturnType<typeof interruption>;
    golden?: { facts: EnvironmentFacts; goldensDir: string };
  },
): Promise<RunOutcomes> {
  const phases = await Promise.all(states.map(async (s): Promise<PhaseOutcome> => {
    const readBack = s.summary!.status === "ok" ? s.spec.readBack : undefined;
    const checkpointFiles = readBack ? await readJsonIfPresent(readBack.out) : undefined;
    return {
      spec: s.spec,
      summary: s.summary!,
      present: s.present,
      ...(s.metrics ? { metrics: s.metrics } : {}),
      ...(checkpointFiles ? { checkpointFiles } : {}),
      ...(s.plan ? { plan: s.plan } : {}),
    };
  }));
  const splitState = states.find((s) => s.spec.role === "split" && s.summary?.status === "ok");
  const golden = run.golden
    ? await readGoldenFacts({
      experiment: plan.experiment,
      goldensDir: run.golden.goldensDir,
      facts: run.golden.facts,
    })
    : undefined;
  return {
    phases,
    interrupted: run.interrupted,
    warnings: await splitTagWarnings(splitState?.spec),
    ...(golden ? { golden } : {}),
    planExecutions: await readPlanExecutions(states),
  };
}

/** Writes the run's outputs, appends history, moves `latest` and prunes checkpoints. */
async function publishRun(
  plan: ResolvedPlan,
  judged: JudgedRun,
  options: RunOptions,
  experimentDir: string,
): Promise<RunSummary> {
  const { resultsDir, progress, imageBaseUrl } = options;
  // Messages and log tails may quote a secret; history and suite indexes get this copy too.
  const summary = HARNESS_REDACTION.redactValue(judged.summary);
  const runDir = plan.runDir;
  await writeTextAtomic(join(runDir, "losses.csv"), judged.losses);
  await writeJsonAtomic(join(runDir, "summary.json"), summary);
  try {
    await renderRun(runDir, { reuseFrom: await latestRunDir(experimentDir), imageBaseUrl });
  } catch (e) {
    // A run without its reports is never PASS: the judge weighs the failure, saying why.
    const reason = reportsNotWritten(judged.evidence, summary, e);
    progress.note(`error: the reports could not be written: ${reason}`);
    await writeJsonAtomic(join(runDir, "summary.json"), summary);
  }
  try {
    await appendHistory(resultsDir, summary, runDir);
    await updateLatest(experimentDir, summary.run_id);
  } catch (e) {
    // A full or read-only disk: summary.json must not keep saying PASS for an ERROR exit.
    reportsNotWritten(judged.evidence, summary, e);
    await writeJsonAtomic(join(runDir, "summary.json"), summary).catch(() => {});
    throw e;
  }
  if (plan.keepCheckpoints === "none") await pruneRunCheckpoints(runDir);
  if (plan.keepCheckpoints === "last") await pruneOlderRuns(experimentDir);
  if (summary.bill) progress.note(billLine(summary.bill));
  progress.runEnd(
    plan.experiment,
    summary.verdict,
    summary.wall_s,
    shownPath(options, runDir),
    runCard(summary),
  );
  return summary;
}

/**
 * The console's card: findings, the cause for the last line, and the reason of every ERROR
 * comparison that no ERROR finding (a failed phase) already explains, so an ERROR never ends
 * the console without saying why.
 */
function runCard(summary: RunSummary): RunCard {
  const findings = summary.findings ?? [];
  const explained = findings.some((f) => f.verdict === "ERROR");
  const errors = explained ? [] : summary.comparisons.filter((c) => c.verdict === "ERROR")
    .map((c) => `${c.name}: ${c.reason ?? "could not be judged"}`);
  return {
    lines: cardLines(findings),
    cause: causeLine(findings),
    errors,
    sensitivity: summary.comparisons.flatMap((c) =>
      c.sensitivity ? [`${c.name} ${c.verdict} (${c.lane}): ${c.sensitivity.statement}`] : []
    ),
    warnings: summary.diagnostics.filter((d) => CONSOLE_WARNINGS.has(d.code))
      .map((d) => d.message),
    phases: summary.phases.length,
    cached: summary.phases.filter((p) => p.cached).length,
  };
}

/**
 * Has the judge weigh a report failure and publishes its new verdict, exit code and diagnostics
 * into the (redacted) summary; returns the reason.
 */
function reportsNotWritten(evidence: RunEvidence, summary: RunSummary, error: unknown): string {
  const reason = describeEnvironmentError(error) ??
    (error instanceof Error ? error.message : String(error));
  const { verdict, exit_code, diagnostics } = HARNESS_REDACTION.redactValue(
    judgeReportFailure(evidence, reason),
  );
  Object.assign(summary, { verdict, exit_code, diagnostics });
  return reason;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** `--force`: every phase, or the named ones and everything that depends on them. */
function forcedPhases(specs: readonly PhaseSpec[], force: boolean | string[]): Set<string> {
  if (force === true) return new Set(specs.map((s) => s.name));
  if (force === false) return new Set();
  const names = new Set(specs.map((s) => s.name));
  const out = new Set<string>();
  for (const name of force) {
    if (!names.has(name)) {
      throw new Error(`--force ${name}: no such phase (phases: ${[...names].join(", ")})`);
    }
    out.add(name);
    for (const d of dependentsOf(specs, name)) out.add(d);
  }
  return out;
}

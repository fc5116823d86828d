/**
 * `parity bisect`: finds the commit of a code input's git repository that broke parity. It
 * drives `git bisect` with the harness as the test — PASS marks the checkout good, FAIL bad,
 * ERROR and ABSTAIN skip (the exit-code contract of `git bisect run`: 0, 1, 125) — running the
 * experiment in this process for each checkout, so the phase cache is shared across commits and
 * a SIGINT stops the trainer and the bisection alike. `git bisect reset` always runs at the end.
 *
 * Why not `git bisect run` itself: it hands its command line to `sh -c`, and the harness passes
 * no argv through a shell; marking each commit here is the same protocol without one.
 *
 * @module
 */

import { join, relative, resolve, sep } from "node:path";
import { type Experiment, resolvePlan } from "../experiment/mod.ts";
import { interruption } from "../process/mod.ts";
import { codeInputDir } from "../pipeline/store/mod.ts";
import { type Progress, runExperiment } from "../pipeline/running/mod.ts";
import { type ResolvedPlan, type RunSummary, UsageError, type Verdict } from "../types/mod.ts";
import { git, gitOk } from "./git.ts";
import { bisectExitCode, type BisectOutcome } from "../parity/mod.ts";

/** A bisect that cannot start (not a code input, dirty tree, unknown revision): exit code 2. */
export class BisectUsageError extends UsageError {}

/** How git is told about a tested commit. */
export type BisectMark = "good" | "bad" | "skip";

/** The mark of each run verdict. */
const MARK_OF: Record<Verdict, BisectMark> = {
  PASS: "good",
  FAIL: "bad",
  ERROR: "skip",
  ABSTAIN: "skip",
};

/** One tested commit. */
export interface BisectStep {
  /** Commit tested. */
  commit: string;
  /** Its subject line. */
  subject: string;
  /** The run's verdict. */
  verdict: Verdict;
  /** What git was told. */
  mark: BisectMark;
  /** The run folder. */
  runDir: string;
  /** The run's summary. */
  summary: RunSummary;
}

/** How the bisection ended. */
export interface BisectResult {
  /** `found`: git named the first bad commit. */
  outcome: BisectOutcome;
  /** The first bad commit, its run and summary. */
  firstBad?: BisectStep;
  /** `ambiguous`: commits left that could be the first bad one (all skipped). */
  candidates?: string[];
  /** Every commit tested, in order. */
  steps: BisectStep[];
  /** Exit code: 0 found, 3 ambiguous or interrupted. */
  exit_code: number;
}

/** What to bisect. */
export interface BisectOptions {
  /** The experiment (validated). */
  experiment: Experiment;
  /** Its file, for the manifests. */
  experimentFile: string | null;
  /** Folder its relative paths resolve against. */
  baseDir: string;
  /** Results root. */
  resultsDir: string;
  /** Goldens root. */
  goldensDir?: string;
  /** The git repository under test: one of the experiment's code inputs. */
  repo: string;
  /** A revision where parity holds. */
  good: string;
  /** A revision where it fails. */
  bad: string;
  /** Progress of each run (notes name the commit under test). */
  progress: Progress;
  /** Environment of the runs. */
  harnessEnv: Record<string, string>;
}

/** Upper bound on tested commits (2^64 commits would need fewer). */
const MAX_STEPS = 64;

function inside(path: string, root: string): boolean {
  return path === root || path.startsWith(root + sep);
}

async function realOrSelf(path: string): Promise<string> {
  return await Deno.realPath(path).catch(() => resolve(path));
}

/** Throws unless the repository is (or contains, or is inside) a code input of the experiment. */
async function assertCodeInput(
  options: BisectOptions,
  plan: ResolvedPlan,
  top: string,
): Promise<void> {
  const inputs = [...new Set(plan.phases.flatMap((p) => p.codeInputs))];
  for (const input of inputs) {
    const dir = codeInputDir(input, options.baseDir, options.harnessEnv);
    if (dir === null) continue;
    const real = await realOrSelf(dir);
    if (inside(real, top) || inside(top, real)) return;
  }
  throw new BisectUsageError(
    `${top} is not a code input of ${options.experiment.name} (its code inputs: ${
      inputs.join(", ") || "none"
    }); add it to trainer.code_inputs so each commit gets its own cache key`,
  );
}

async function startChecks(
  options: BisectOptions,
  plan: ResolvedPlan,
): Promise<{ top: string; good: string; bad: string }> {
  const topOut = await git(options.repo, ["rev-parse", "--show-toplevel"]);
  if (topOut.code !== 0) throw new BisectUsageError(`${options.repo}: not a git repository`);
  const top = await realOrSelf(topOut.stdout);
  await assertCodeInput(options, plan, top);
  const status = await gitOk(top, ["status", "--porcelain", "--untracked-files=no"]);
  if (status !== "") {
    throw new BisectUsageError(`${top} has uncommitted changes; commit or stash them first`);
  }
  if ((await git(top, ["bisect", "log"])).code === 0) {
    throw new BisectUsageError(`${top}: a git bisect is already in progress (git bisect reset)`);
  }
  const commit = async (rev: string) => {
    const out = await git(top, ["rev-parse", "--verify", "--quiet", `${rev}^{commit}`]);
    if (out.code !== 0) throw new BisectUsageError(`${top}: unknown revision ${rev}`);
    return out.stdout;
  };
  return { top, good: await commit(options.good), bad: await commit(options.bad) };
}

/** Runs the bisection; the repository is left on the branch or commit it was on. */
export async function bisect(options: BisectOptions): Promise<BisectResult> {
  // Resolved once: every tested commit runs this plan (a commit changes the code inputs' digests,
  // and so the cache keys, never the plan).
  const plan = resolvePlan(options.experiment, {
    baseDir: options.baseDir,
    harnessEnv: options.harnessEnv,
  });
  const { top, good, bad } = await startChecks(options, plan);
  const steps: BisectStep[] = [];
  const test = async (): Promise<BisectStep> => {
    const commit = await gitOk(top, ["rev-parse", "HEAD"]);
    const subject = await gitOk(top, ["log", "-1", "--format=%s", commit]);
    options.progress.note(`bisect: testing ${commit.slice(0, 12)} ${subject}`);
    const { runDir, summary } = await runExperiment({ plan, experiment: options.experiment }, {
      resultsDir: options.resultsDir,
      baseDir: options.baseDir,
      experimentFile: options.experimentFile,
      only: [],
      keepGoing: true,
      force: false, // a commit tested before (or a phase its change cannot reach) is reused
      progress: options.progress,
      harnessEnv: options.harnessEnv,
      goldensDir: options.goldensDir,
    });
    return {
      commit,
      subject,
      verdict: summary.verdict,
      mark: MARK_OF[summary.verdict],
      runDir,
      summary,
    };
  };
  try {
    await gitOk(top, ["bisect", "start", bad, good]);
    for (let i = 0; i < MAX_STEPS; i++) {
      if (interruption()) break;
      const step = await test();
      if (step.summary.interrupted) break;
      steps.push(step);
      const out = await git(top, ["bisect", step.mark]);
      const found = /^([0-9a-f]{40}) is the first bad commit/m.exec(out.stdout);
      if (found) {
        let firstBad = steps.find((s) => s.commit === found[1]);
        if (!firstBad) {
          // The bad endpoint itself, which git never asks to test: run it for its card.
          await gitOk(top, ["checkout", "--quiet", found[1]]);
          firstBad = await test();
        }
        return { outcome: "found", firstBad, steps, exit_code: bisectExitCode("found") };
      }
      if (/only 'skip'ped commits left to test/.test(out.stdout)) {
        const candidates = [...out.stdout.matchAll(/^([0-9a-f]{40})$/gm)].map((m) => m[1]);
        return { outcome: "ambiguous", candidates, steps, exit_code: bisectExitCode("ambiguous") };
      }
      if (out.code !== 0) throw new Error(`git bisect ${step.mark} failed: ${out.stderr}`);
    }
    return { outcome: "interrupted", steps, exit_code: bisectExitCode("interrupted") };
  } finally {
    const reset = await git(top, ["bisect", "reset"]);
    if (reset.code !== 0) {
      options.progress.note(`warning: git bisect reset failed in ${top}: ${reset.stderr}`);
    }
  }
}

function shown(path: string): string {
  const rel = relative(Deno.cwd(), path);
  return rel.startsWith("..") ? path : rel;
}

/** The verdict card of a commit: verdict, first failing comparison, state checks, report. */
function verdictCard(step: BisectStep): string[] {
  const s = step.summary;
  const lines = [`  verdict ${s.verdict} (exit ${s.exit_code})`];
  const failing = s.comparisons.find((c) => c.verdict !== "PASS");
  if (failing) {
    const at = failing.divergence
      ? ` at step ${failing.divergence.step}: ${failing.divergence.a} vs ${failing.divergence.b}`
      : "";
    lines.push(`  ${failing.name} (${failing.metric}, ${failing.lane}): ${failing.verdict}${at}`);
  }
  for (const c of s.state_checks.filter((c) => c.differing.length > 0)) {
    lines.push(`  state check ${c.phase}: ${c.differing.join(", ")} differ`);
  }
  lines.push(`  report: ${shown(join(step.runDir, "report.md"))}`);
  return lines;
}

/** What the CLI prints at the end. */
export function formatBisect(result: BisectResult): string {
  const lines = result.steps.map((s) =>
    `  ${s.mark.padEnd(4)} ${s.commit.slice(0, 12)} ${s.verdict.padEnd(7)} ${s.subject}`
  );
  const tested = `${result.steps.length} run${result.steps.length === 1 ? "" : "s"}`;
  if (result.outcome === "found") {
    const b = result.firstBad!;
    return [
      `bisect: first bad commit ${b.commit} ${b.subject} (${tested})`,
      ...verdictCard(b),
      "tested:",
      ...lines,
    ].join("\n");
  }
  if (result.outcome === "ambiguous") {
    return [
      `bisect: inconclusive after ${tested}: only skipped (ERROR/ABSTAIN) commits are left; ` +
      `the first bad commit is one of:`,
      ...(result.candidates ?? []).map((c) => `  ${c}`),
      "tested:",
      ...lines,
    ].join("\n");
  }
  return [`bisect: interrupted after ${tested}; git bisect was reset`, ...lines].join("\n");
}

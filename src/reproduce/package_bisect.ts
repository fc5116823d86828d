/**
 * `parity bisect --package <name> --good X --bad Y <file>`: finds the first published release of
 * the trainer preset's framework that breaks parity. Each release gets its own cached environment
 * (the preset's `releases.setupArgv`, once per version); the experiment runs with the preset's
 * release argument set to it. A release whose environment cannot be built, one of whose phases
 * crashed or timed out (an import error, a crash at load), or whose run is ERROR or ABSTAIN *cannot
 * run* the experiment: it is marked ERROR and never called bad, and the search goes around it. The
 * first bad release is the first that runs and FAILs after the last good one.
 *
 * @module
 */

import { type Experiment, resolvePlan, trainerPreset } from "../experiment/mod.ts";
import { interruption } from "../process/mod.ts";
import { type Progress, runExperiment } from "../pipeline/running/mod.ts";
import { type RunSummary, UsageError, type Verdict } from "../types/mod.ts";
import {
  bisectExitCode,
  type BisectOutcome,
  releaseCannotRun,
  type ReleaseMark,
  releaseMark,
} from "../parity/mod.ts";

/** A package bisect that cannot start (no such package for the preset, unknown release): exit 2. */
export class PackageBisectUsageError extends UsageError {}

/** How a tested release is marked (parity's `releaseMark`). */
export type { ReleaseMark };

/** One tested release. */
export interface ReleaseStep {
  /** The release. */
  version: string;
  /** The run's verdict (ERROR when the environment could not be built). */
  verdict: Verdict;
  /** good, bad, or ERROR: the release cannot run the experiment. */
  mark: ReleaseMark;
  /** Why it cannot run (the set-up's last line, or the run's verdict). */
  reason?: string;
  /** The run folder, when it ran. */
  runDir?: string;
  /** The run's summary, when it ran. */
  summary?: RunSummary;
}

/** How the package bisection ended. */
export interface PackageBisectResult {
  /** `found`: the first bad release is named; `ambiguous`: an endpoint does not hold. */
  outcome: BisectOutcome;
  /** The first release found bad (the bad endpoint when none between is). */
  firstBad?: ReleaseStep;
  /** The last release found good (the good endpoint when none between is). */
  lastGood: string;
  /** Releases between the last good and the first bad one that cannot run (ERROR). */
  cannotRun: string[];
  /** Every release tested, in order. */
  steps: ReleaseStep[];
  /** 0 found, 3 ambiguous or interrupted. */
  exit_code: number;
}

/**
 * Runs one release: its verdict, run folder and summary, and `cannotRun` when the release could
 * not run the experiment (its environment failed to build, a phase crashed or timed out, the run
 * was ERROR or ABSTAIN) — then the release is ERROR whatever the verdict.
 */
export type ReleaseRunner = (version: string) => Promise<
  { verdict: Verdict; runDir?: string; summary?: RunSummary; cannotRun?: string }
>;

/** What to bisect. */
export interface PackageBisectOptions {
  /** The package (`deepspeed`); must be the trainer preset's framework. */
  package: string;
  /** A release where parity holds. */
  good: string;
  /** A release where it fails. */
  bad: string;
  /** The registry's releases, any order (pre-releases are ignored). */
  releases: string[];
  /** Runs one release. */
  run: ReleaseRunner;
  /** Progress notes. */
  note: (line: string) => void;
}

/** `[major, minor, patch]` of a plain `X.Y.Z` release, or null (pre-releases, other forms). */
function parseRelease(version: string): [number, number, number] | null {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

/** Release order (plain `X.Y.Z` only). */
export function compareReleases(a: string, b: string): number {
  const x = parseRelease(a)!;
  const y = parseRelease(b)!;
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** The releases pip's `index versions` lists (`Available versions: 0.18.4, 0.18.3, ...`). */
export function parsePipVersions(stdout: string): string[] {
  const line = /^Available versions:\s*(.+)$/m.exec(stdout);
  return line ? line[1].split(",").map((v) => v.trim()).filter((v) => v !== "") : [];
}

/**
 * The bisection proper, over `releases` between `good` and `bad` inclusive: the good endpoint is
 * run first and must PASS, the bad one is run at the end for its card when nothing between was
 * bad. Pure apart from `run`, so tests drive it with a table.
 */
export async function bisectReleases(options: PackageBisectOptions): Promise<PackageBisectResult> {
  for (const [which, v] of [["--good", options.good], ["--bad", options.bad]]) {
    if (parseRelease(v) === null || !options.releases.includes(v)) {
      throw new PackageBisectUsageError(
        `${which} ${v} is not a published ${options.package} release`,
      );
    }
  }
  if (compareReleases(options.good, options.bad) >= 0) {
    throw new PackageBisectUsageError(
      `--good ${options.good} must be older than --bad ${options.bad}`,
    );
  }
  const line = [...new Set(options.releases)].filter((v) =>
    parseRelease(v) !== null && compareReleases(v, options.good) >= 0 &&
    compareReleases(v, options.bad) <= 0
  ).sort(compareReleases);
  let lo = 0;
  let hi = line.length - 1;
  const steps: ReleaseStep[] = [];
  const cannot = new Set<number>();
  const test = async (i: number): Promise<ReleaseStep> => {
    const version = line[i];
    options.note(`bisect: testing ${options.package} ${version}`);
    const out = await options.run(version);
    const { mark, reason } = releaseMark(out);
    const step: ReleaseStep = {
      version,
      verdict: out.verdict,
      mark,
      ...(reason !== undefined ? { reason } : {}),
      ...(out.runDir !== undefined ? { runDir: out.runDir } : {}),
      ...(out.summary !== undefined ? { summary: out.summary } : {}),
    };
    steps.push(step);
    return step;
  };
  // The good endpoint is run first (releases are cheap to check, unlike trusting a commit): a
  // release that does not PASS cannot anchor the search.
  const anchor = await test(lo);
  if (anchor.mark !== "good") {
    return {
      outcome: "ambiguous",
      lastGood: line[lo],
      cannotRun: anchor.mark === "ERROR" ? [line[lo]] : [],
      steps,
      exit_code: bisectExitCode("ambiguous"),
    };
  }
  while (true) {
    if (interruption()) {
      return {
        outcome: "interrupted",
        lastGood: line[lo],
        cannotRun: [],
        steps,
        exit_code: bisectExitCode("interrupted"),
      };
    }
    const open = [...Array(hi - lo - 1).keys()].map((k) => lo + 1 + k).filter((i) =>
      !cannot.has(i)
    );
    if (open.length === 0) break;
    const middle = (lo + hi) / 2;
    const i = open.reduce((a, b) => Math.abs(b - middle) < Math.abs(a - middle) ? b : a);
    const step = await test(i);
    if (step.mark === "good") lo = i;
    else if (step.mark === "bad") hi = i;
    else cannot.add(i);
  }
  const firstBad = steps.find((s) => s.version === line[hi] && s.mark === "bad") ??
    await test(hi);
  const between = [...cannot].filter((i) => i > lo && i < hi).sort((a, b) => a - b).map((i) =>
    line[i]
  );
  if (firstBad.mark !== "bad") {
    // The bad endpoint itself cannot run (or passes): nothing was found.
    return {
      outcome: "ambiguous",
      lastGood: line[lo],
      cannotRun: [...between, line[hi]],
      steps,
      exit_code: bisectExitCode("ambiguous"),
    };
  }
  // A release that cannot run is never bad: the first bad release is the first that runs and
  // diverges; those between the last good one and it are listed as ERROR.
  return {
    outcome: "found",
    firstBad,
    lastGood: line[lo],
    cannotRun: between,
    steps,
    exit_code: bisectExitCode("found"),
  };
}

/** What the CLI passes to run a package bisect on an experiment. */
export interface PackageBisectRun {
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
  /** The package, good and bad releases. */
  package: string;
  good: string;
  bad: string;
  /** Progress of each run. */
  progress: Progress;
  /** Environment of the runs. */
  harnessEnv: Record<string, string>;
}

/**
 * Bisects the trainer preset's framework releases on `experiment`: lists the published releases
 * (the preset's `listArgv`), builds each tested release's environment (cached by the preset's
 * set-up) and runs the experiment under it. Never through a shell.
 */
export async function bisectPackage(options: PackageBisectRun): Promise<PackageBisectResult> {
  const releases = trainerPreset(options.experiment)?.releases;
  if (releases === undefined || releases.package !== options.package) {
    throw new PackageBisectUsageError(
      `the experiment's trainer preset does not run ${options.package} releases` +
        (releases ? ` (it runs ${releases.package})` : ""),
    );
  }
  const listed = await _output(releases.listArgv());
  if (listed.code !== 0) {
    throw new PackageBisectUsageError(
      `cannot list ${options.package} releases: ${_lastLine(listed.stderr)}`,
    );
  }
  const all = parsePipVersions(listed.stdout).filter((v) =>
    parseRelease(v) !== null && compareReleases(v, releases.oldest) >= 0
  );
  const run: ReleaseRunner = async (version) => {
    const setup = await _output(releases.setupArgv(version));
    if (setup.code !== 0) {
      return {
        verdict: "ERROR",
        cannotRun: `its environment cannot be built: ${_lastLine(setup.stderr || setup.stdout)}`,
      };
    }
    const trainer = options.experiment.trainer;
    const experiment: Experiment = {
      ...options.experiment,
      trainer: {
        ...trainer,
        args: { ...(trainer.args ?? {}), [releases.releaseArg]: version },
      },
    };
    // Each release is its own experiment (its release argument), resolved once for its run.
    const plan = resolvePlan(experiment, {
      baseDir: options.baseDir,
      harnessEnv: options.harnessEnv,
    });
    const { runDir, summary } = await runExperiment({ plan, experiment }, {
      resultsDir: options.resultsDir,
      baseDir: options.baseDir,
      experimentFile: options.experimentFile,
      only: [],
      keepGoing: true,
      force: false,
      progress: options.progress,
      harnessEnv: options.harnessEnv,
      goldensDir: options.goldensDir,
    });
    const cannotRun = releaseCannotRun(summary);
    return { verdict: summary.verdict, runDir, summary, ...(cannotRun ? { cannotRun } : {}) };
  };
  return await bisectReleases({
    package: options.package,
    good: options.good,
    bad: options.bad,
    releases: all,
    run,
    note: (line) => options.progress.note(line),
  });
}

async function _output(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

function _lastLine(text: string): string {
  return text.trim().split("\n").at(-1) ?? "";
}

/** What the CLI prints at the end. */
export function formatPackageBisect(pkg: string, result: PackageBisectResult): string {
  const lines = result.steps.map((s) =>
    `  ${s.mark.padEnd(5)} ${pkg} ${s.version.padEnd(8)} ${s.verdict}${
      s.reason ? ` — ${s.reason}` : ""
    }`
  );
  const tested = `${result.steps.length} release${result.steps.length === 1 ? "" : "s"} run`;
  const cannot = result.cannotRun.length > 0
    ? [`  cannot run (ERROR, not bad): ${result.cannotRun.join(", ")}`]
    : [];
  if (result.outcome === "found") {
    const b = result.firstBad!;
    return [
      `bisect: first bad release ${pkg} ${b.version} (last good ${result.lastGood}; ${tested})`,
      ...cannot,
      ...(b.summary?.findings?.[0] ? [`  ${b.summary.findings[0].title}`] : []),
      ...(b.runDir ? [`  run: ${b.runDir}`] : []),
      "tested:",
      ...lines,
    ].join("\n");
  }
  if (result.outcome === "ambiguous") {
    return [
      `bisect: inconclusive after ${tested}: ${
        result.steps[0]?.mark !== "good"
          ? `the good endpoint ${result.lastGood} does not PASS (${result.steps[0]?.mark})`
          : "the bad endpoint cannot run the experiment, so no release was found bad"
      }`,
      ...cannot,
      "tested:",
      ...lines,
    ].join("\n");
  }
  return [`bisect: interrupted after ${tested}`, ...lines].join("\n");
}

/**
 * The {@link Progress} sink used by the CLI: a live line on a TTY and plain lines in CI logs
 * (rendering by src/process's ProgressReporter), with training progress read from each phase's
 * metrics stream.
 *
 * @module
 */

import { seconds } from "../format/numbers.ts";
import { followMetricsSteps, ProgressReporter } from "../process/mod.ts";
import type { Follower, Progress } from "./run_progress.ts";

/** Options of {@link consoleProgress}. */
export interface ConsoleProgressOptions {
  /** Print only the run's start and end lines. */
  quiet?: boolean;
}

/** A progress sink writing to stderr. */
export function consoleProgress(options: ConsoleProgressOptions = {}): Progress {
  const reporter = new ProgressReporter();
  let total = 0;
  let index = 0;
  const handles = new Map<string, ReturnType<ProgressReporter["startPhase"]>>();
  const start = (phase: string, steps?: number) => {
    if (options.quiet) return;
    handles.set(phase, reporter.startPhase({ name: phase, index: ++index, total, steps }));
  };
  return {
    runStart(experiment, runDir, phases) {
      total = phases;
      index = 0;
      reporter.note(`run ${experiment}: ${phases} phases -> ${runDir}`);
    },
    phaseStart(phase): Follower {
      start(phase);
      return { stop() {} };
    },
    followMetrics(phase, metricsFile, stopAt): Follower {
      start(phase, stopAt);
      if (options.quiet) return { stop() {} };
      const follower = followMetricsSteps(metricsFile, (step) => handles.get(phase)?.step(step));
      return { stop: () => follower.stop().then(() => {}) };
    },
    phaseEnd(phase, status, wallS, message) {
      const handle = handles.get(phase);
      handles.delete(phase);
      handle?.end(message && status !== "ok" ? `${status}: ${message}` : status, wallS);
    },
    note(text) {
      reporter.note(text);
    },
    runEnd(experiment, verdict, wallS, runDir, card) {
      // The card before the last line, so a CI log's tail says what happened and what to try.
      for (const line of card?.lines ?? []) reporter.note(line);
      const cause = card?.cause ? ` — ${card.cause}` : "";
      reporter.note(
        `${verdict} ${experiment} in ${seconds(wallS)}${cause}: ${runDir}/report.md`,
      );
      reporter.close();
    },
  };
}

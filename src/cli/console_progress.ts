/**
 * The {@link Progress} sink used by the CLI: a live line on a TTY and plain lines in CI logs
 * (rendering by src/process's ProgressReporter), with training progress read from each phase's
 * metrics stream. Progress and notes go to stderr; what the run concluded (the card, ERROR
 * reasons and the verdict line with its report path) goes to stdout, so `parity run ... >
 * verdict.txt` keeps the result and a CI log keeps both.
 *
 * @module
 */

import { duration } from "../format/mod.ts";
import { followMetricsSteps, ProgressReporter } from "../process/mod.ts";
import type { Follower, Progress, RunCard } from "../pipeline/running/mod.ts";

/** Options of {@link consoleProgress}. */
export interface ConsoleProgressOptions {
  /** No phase progress: only notes, errors, the card and the verdict line. */
  quiet?: boolean;
  /** Where the result lines go (default: stdout through console.log). */
  result?: (line: string) => void;
}

/** ERROR reasons listed on the console before the rest are only counted. */
const MAX_ERROR_LINES = 5;

/** A progress sink writing progress to stderr and the result to stdout. */
export function consoleProgress(options: ConsoleProgressOptions = {}): Progress {
  const reporter = new ProgressReporter();
  const result = options.result ?? ((line: string) => console.log(line));
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
      reporter.close();
      // The card before the last line, so a CI log's tail says what happened and what to try.
      for (const line of card?.lines ?? []) result(line);
      for (const line of card?.sensitivity ?? []) result(line);
      for (const line of card?.warnings ?? []) result(`WARNING ${line}`);
      const errors = card?.errors ?? [];
      for (const line of errors.slice(0, MAX_ERROR_LINES)) result(`ERROR ${line}`);
      if (errors.length > MAX_ERROR_LINES) {
        result(`ERROR +${errors.length - MAX_ERROR_LINES} more: see ${runDir}/report.md`);
      }
      const why = (card?.cause ?? errors[0] ?? "").replace(/\.$/, "");
      result(
        `${verdict} ${experiment} in ${duration(wallS)}${phasesNote(card)}${
          why === "" ? "" : ` — ${why}`
        }: ${runDir}/report.md`,
      );
    },
  };
}

/** ` (12 phases, all cached)`, ` (12 phases, 9 cached)` or ` (12 phases)`. */
function phasesNote(card: RunCard | undefined): string {
  if (card === undefined) return "";
  const cached = card.cached === 0
    ? ""
    : card.cached === card.phases
    ? ", all cached"
    : `, ${card.cached} cached`;
  return ` (${card.phases} phase${card.phases === 1 ? "" : "s"}${cached})`;
}

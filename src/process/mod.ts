/**
 * Process supervision for the harness: every phase is a child process in its own process group,
 * with its output streamed line by line to log files, a timeout that takes down the whole group,
 * forwarding of SIGINT/SIGTERM so nothing outlives the harness, progress display, redaction of
 * secrets for manifests, and the one atomic (redacting) text writer.
 *
 * ```ts
 * import { installSignalHandlers, runChild } from "./mod.ts";
 *
 * installSignalHandlers({ onInterrupt: (i) => Deno.exit(i.exitCode) });
 * const result = await runChild({
 *   argv: ["python", "train.py", "--steps", "40"],
 *   stdoutPath: "phases/baseline/stdout.log",
 *   stderrPath: "phases/baseline/stderr.log",
 *   timeoutMs: 3_600_000,
 * });
 * console.log(result.status, result.message);
 * ```
 *
 * Progress from the child's metrics stream:
 *
 * ```ts
 * const progress = new ProgressReporter();
 * const phase = progress.startPhase({ name: "baseline", index: 1, total: 7, steps: 40 });
 * const follower = followMetricsSteps("phases/baseline/metrics.jsonl", (step) => phase.step(step));
 * const result = await runChild(spec);
 * await follower.stop();
 * phase.end(result.status, result.wallS);
 * ```
 *
 * @module
 */

export {
  type ChildResult,
  type ChildSpec,
  type ChildStatus,
  DEFAULT_GRACE_MS,
  type OutputStream,
  runChild,
} from "./run_child.ts";
export {
  exitCodeForSignal,
  FORCE_EXIT_AFTER_SIGNALS,
  HANDLED_SIGNALS,
  installSignalHandlers,
  type Interruption,
  interruption,
  type LiveChildInfo,
  liveChildren,
  resetInterruption,
  shutdown,
  type ShutdownOptions,
  type SignalHandlerOptions,
} from "./signals.ts";
export {
  type PhaseInfo,
  type PhaseProgress,
  type ProgressOptions,
  ProgressReporter,
} from "./progress_reporter.ts";
export {
  followMetricsSteps,
  type FollowOptions,
  type MetricsFollower,
} from "./metrics_follower.ts";
export { isSecretName, REDACTED, redactEnv } from "./redact.ts";
export {
  HARNESS_REDACTION,
  MIN_SECRET_CHARS,
  RedactionPolicy,
  TOKEN_PATTERNS,
} from "./redaction_policy.ts";
export { groupMembers, reapGroup } from "./reap.ts";
export { writeTextAtomic } from "./write_atomic.ts";
export { fileTail } from "./_log_tail.ts";
export { type LiveChildControl, registerLiveChild } from "./_live_children.ts";

/**
 * What a failed child's log tail says about its cause. A launcher (torchrun) ends a failed launch
 * with its own traceback (`ChildFailedError`) and a report of exit codes, so the last lines of
 * the tail name the launcher, not the rank's message ("terminate called after throwing ...",
 * "RuntimeError: ...") printed just before them. The report is kept as one line: which rank
 * ended how.
 *
 * @module
 */

/** The lines a card shows and the one its headline quotes. */
export interface CauseLines {
  /** The tail's last lines, the launcher's own traceback and report folded into one line. */
  lines: string[];
  /** The last line that looks like an error message, else the last line; null when empty. */
  headline: string | null;
}

/** Lines a card keeps. */
const CARD_LINES = 8;
// A program's own message first ("what():  Connection reset", "RuntimeError: ..."), then any line
// that sounds like an error (a launcher's "failed (exitcode: -6)").
const MESSAGE_LINE = /terminate called|what\(\):|\w(?:Error|Exception):/;
const ERROR_LINE = /error|exception|failed|refus|abort/i;
const LAUNCHER_FAILED = /ChildFailedError/;
// The lines of torchrun's report of exit codes.
const REPORT_LINE =
  /^\s*(?:=+|-+|.* FAILED|Failures:|<NO_OTHER_FAILURES>|Root Cause \(first observed failure\):|\[\d+\]:|(?:time|host|rank|exitcode|error_file|traceback)\s*:.*)\s*$/;
const REPORT_EXIT = /^\s*exitcode\s*:\s*(-?\d+)(.*)$/;
const REPORT_RANK = /^\s*rank\s*:\s*(\d+)/;
const REPORT_SIGNAL = /^\s*traceback\s*:\s*Signal \d+ \((SIG\w+)\)/;

/** The cause lines of a failed child's `tail` (its last output lines, oldest first). */
export function causeLines(tail: string): CauseLines {
  let lines = tail.split("\n").filter((l) => l.trim() !== "");
  const launcher = _launcherReport(lines);
  if (launcher) lines = [...lines.slice(0, launcher.start), launcher.line];
  const kept = lines.slice(-CARD_LINES);
  const rankLines = launcher ? kept.slice(0, -1) : kept;
  const newestFirst = [...rankLines].reverse();
  const error = newestFirst.find((l) => MESSAGE_LINE.test(l)) ??
    newestFirst.find((l) => ERROR_LINE.test(l));
  const headline = (error ?? kept[kept.length - 1] ?? null)?.trim() ?? null;
  return { lines: kept, headline };
}

/**
 * Where torchrun's own closing output starts (the traceback that raises `ChildFailedError`, or
 * its report of exit codes when the traceback was cut off) and one line for the report: the
 * rank it names as the root cause (named last) and how that rank ended.
 */
function _launcherReport(lines: string[]): { start: number; line: string } | null {
  let start = lines.length;
  while (start > 0 && REPORT_LINE.test(lines[start - 1])) start--;
  const report = lines.slice(start);
  if (!report.some((l) => REPORT_EXIT.test(l))) return null;
  if (start > 0 && LAUNCHER_FAILED.test(lines[start - 1])) {
    const traceback = lines.slice(0, start).findLastIndex((l) =>
      /^Traceback \(most recent call last\):/.test(l)
    );
    start = traceback >= 0 ? traceback : start - 1;
  }
  let rank: string | null = null;
  let exit: string | null = null;
  let signal: string | null = null;
  for (const line of report) {
    rank = REPORT_RANK.exec(line)?.[1] ?? rank;
    signal = REPORT_SIGNAL.exec(line)?.[1] ?? signal;
    const m = REPORT_EXIT.exec(line);
    if (m) exit = `${m[1]}${m[2].replace(/\(pid: \d+\)/, "").replace(/\s+/g, " ").trimEnd()}`;
  }
  if (signal && !exit?.includes(signal)) exit = `${exit} (${signal})`;
  const who = rank === null ? "a rank" : `rank ${rank}`;
  return { start, line: `launcher: ${who} ended with exit code ${exit}` };
}

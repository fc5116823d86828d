import { deepEqual, equal, ok } from "node:assert/strict";
import { ProgressReporter } from "./progress_reporter.ts";

const NBSP = "\u00a0";
const S = `${NBSP}s`; // the one duration format: `6.5 s` with a no-break space

function fakeTerminal(tty: boolean) {
  let clock = 0;
  const chunks: string[] = [];
  const reporter = new ProgressReporter({
    tty,
    write: (text) => chunks.push(text),
    now: () => clock,
    columns: 200,
  });
  return {
    reporter,
    chunks,
    advance: (ms: number) => clock += ms,
    /** What a terminal would show: each line as last rewritten. */
    screen: () => render(chunks.join("")),
  };
}

const ERASE = "§"; // stands in for the erase-line escape while splitting

/** Interpret `\r`, the erase-line sequence and `\n` the way a terminal does. */
function render(text: string): string[] {
  const lines: string[] = [""];
  for (const part of text.replaceAll("\x1b[2K", ERASE).split(/(\r|\n|§)/)) {
    if (part === "\n") lines.push("");
    else if (part === "\r") continue;
    else if (part === ERASE) lines[lines.length - 1] = "";
    else lines[lines.length - 1] += part;
  }
  return lines;
}

Deno.test("ProgressReporter on a terminal rewrites one live line with step and ETA", () => {
  const term = fakeTerminal(true);
  const phase = term.reporter.startPhase({ name: "resume-native", index: 3, total: 7, steps: 40 });
  deepEqual(term.screen(), ["[phase 3/7] resume-native"]);
  term.advance(500);
  phase.step(21); // a resumed phase starts at step 21: the rate is measured from there
  deepEqual(term.screen(), ["[phase 3/7] resume-native  step 21/40"]);
  term.advance(3000);
  phase.step(27); // 6 steps in 3 s => 13 steps left take 6.5 s
  deepEqual(term.screen(), [`[phase 3/7] resume-native  step 27/40  ETA 6.5${S}`]);
  ok(!term.chunks.join("").slice(0, -1).includes("\n"), "nothing but the live line so far");
  term.advance(50);
  phase.step(28); // within the redraw interval: not drawn yet
  deepEqual(term.screen(), [`[phase 3/7] resume-native  step 27/40  ETA 6.5${S}`]);
  term.advance(6000);
  phase.step(40);
  deepEqual(term.screen(), [`[phase 3/7] resume-native  step 40/40  ETA 0.0${S}`]);
  phase.end("ok");
  deepEqual(term.screen(), [`phase resume-native ok in 9.6${S}`, ""]);
  term.reporter.close();
  deepEqual(term.screen(), [`phase resume-native ok in 9.6${S}`, ""]);
});

Deno.test("ProgressReporter on a terminal prints notes and finished phases above the live line", () => {
  const term = fakeTerminal(true);
  const a = term.reporter.startPhase({ name: "baseline", index: 1, total: 3, steps: 10 });
  const b = term.reporter.startPhase({ name: "split", index: 2, total: 3, steps: 5 });
  a.step(2);
  term.advance(200);
  b.step(1);
  deepEqual(term.screen(), ["[phase 1/3] baseline  step 2/10  |  [phase 2/3] split  step 1/5"]);
  term.reporter.note("warning: slow disk");
  b.end("failed", 1.25);
  deepEqual(term.screen(), [
    "warning: slow disk",
    `phase split failed in 1.3${S}`,
    "[phase 1/3] baseline  step 2/10",
  ]);
  term.reporter.close();
  deepEqual(term.screen(), ["warning: slow disk", `phase split failed in 1.3${S}`, ""]);
});

Deno.test("ProgressReporter off a terminal prints one line per 10% of a long phase, and its end", () => {
  const log = fakeTerminal(false);
  const phase = log.reporter.startPhase({ name: "baseline", index: 1, total: 2, steps: 100 });
  for (let step = 1; step <= 100; step++) {
    log.advance(100); // 100 ms per step: 10 steps per 10% bucket, one second per bucket
    phase.step(step);
  }
  phase.end("ok");
  const lines = log.chunks.join("").split("\n");
  equal(lines.at(-1), "", "every write ends with a newline");
  ok(!log.chunks.join("").includes("\r"), "no carriage returns in CI logs");
  // Nothing in the first 2 s; then the bucket reached at step 20, and one line per bucket.
  equal(lines[0], `[phase 1/2] baseline  step 20/100  ETA 8.0${S}`);
  equal(lines.at(-3), `[phase 1/2] baseline  step 100/100  ETA 0.0${S}`);
  equal(lines.at(-2), `phase baseline ok in 10.0${S}`);
  equal(lines.length, 11, lines.join("\n")); // 9 progress lines (20%..100%), end, ""
});

Deno.test("ProgressReporter off a terminal prints a short phase as one line", () => {
  const log = fakeTerminal(false);
  const phase = log.reporter.startPhase({ name: "resume-native", index: 3, total: 12, steps: 40 });
  for (let step = 21; step <= 40; step++) {
    log.advance(25); // half a second in all
    phase.step(step);
  }
  phase.end("ok", 0.5);
  deepEqual(log.chunks, [`phase resume-native ok in 0.5${S}\n`]);
});

Deno.test("ProgressReporter off a terminal never prints more than one line per 10% of the steps", () => {
  const log = fakeTerminal(false);
  const phase = log.reporter.startPhase({ name: "long", index: 1, total: 1, steps: 10_000 });
  for (let step = 1; step <= 2000; step++) {
    log.advance(100);
    phase.step(step); // 200 s for 20%: two buckets, whatever the time
  }
  const progressLines = log.chunks.filter((c) => c.includes("step"));
  // Once 2 s have passed, the first step says the phase is alive; then one line per 10%.
  deepEqual(progressLines.map((l) => l.match(/step (\d+)/)![1]), ["20", "1000", "2000"]);
  ok(progressLines[1].includes(`ETA 15${NBSP}min${NBSP}00${S}`), progressLines[1]);
});

Deno.test("ProgressReporter ignores repeated or decreasing steps and a throwing writer", () => {
  const log = fakeTerminal(false);
  const phase = log.reporter.startPhase({ name: "convert", index: 2, total: 4, steps: 100 });
  log.advance(3000);
  phase.step(5);
  phase.step(5);
  phase.step(3);
  phase.step(Number.NaN);
  equal(log.chunks.filter((c) => c.includes("step")).length, 1);
  const broken = new ProgressReporter({
    tty: true,
    write: () => {
      throw new Error("EPIPE");
    },
  });
  broken.startPhase({ name: "x", index: 1, total: 1, steps: 2 }).step(1);
  broken.close();
});

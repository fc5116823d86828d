import { deepEqual, equal, ok } from "node:assert/strict";
import { followMetricsSteps } from "./metrics_follower.ts";
import { runChild } from "./run_child.ts";
import { ProgressReporter } from "./progress_reporter.ts";

const fixture = (name: string) => new URL(`../../test/programs/${name}`, import.meta.url).pathname;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "metrics_follower_test_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("followMetricsSteps() reports rising steps and tolerates partial, blank and bad lines", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/metrics.jsonl`;
    const seen: number[] = [];
    const follower = followMetricsSteps(path, (step) => seen.push(step), { intervalMs: 10 });
    await pause(30); // the file does not exist yet: no error, nothing seen
    equal(follower.maxStep, null);
    await Deno.writeTextFile(path, '{"step": 1, "loss": 3.1}\n{"step": 2, "lo');
    await pause(60);
    deepEqual(seen, [1]);
    await Deno.writeTextFile(path, 'ss": 3.0}\n\nnot json\n[1,2]\n{"step": "3"}\n', {
      append: true,
    });
    await Deno.writeTextFile(path, '{"event": "loaded", "step": 1}\n{"step": 4, "loss": 2', {
      append: true,
    });
    await pause(60);
    deepEqual(seen, [1, 2]);
    await Deno.writeTextFile(path, '.9}\n{"step": 5, "loss": 2.8}', { append: true });
    equal(await follower.stop(), 5, "stop() reads the rest, including an unterminated last line");
    deepEqual(seen, [1, 2, 4, 5]);
    await Deno.writeTextFile(path, '{"step": 9, "loss": 1}\n', { append: true });
    await pause(40);
    deepEqual(seen, [1, 2, 4, 5], "nothing is read after stop()");
  });
});

Deno.test("followMetricsSteps() starts over when the file is rewritten", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/metrics.jsonl`;
    await Deno.writeTextFile(path, '{"step": 1}\n{"step": 2}\n{"step": 3}\n');
    const seen: number[] = [];
    const follower = followMetricsSteps(path, (step) => seen.push(step), { intervalMs: 10 });
    await pause(40);
    await Deno.writeTextFile(path, '{"step": 4}\n');
    await pause(40);
    equal(await follower.stop(), 4);
    deepEqual(seen, [1, 2, 3, 4]);
  });
});

Deno.test("followMetricsSteps() drives a ProgressReporter from a child's metrics stream", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/metrics.jsonl`;
    const output: string[] = [];
    // No 2 s wait before progress lines: this child is quick.
    const progress = new ProgressReporter({
      tty: false,
      write: (text) => output.push(text),
      minIntervalMs: 0,
    });
    const phase = progress.startPhase({ name: "resume-native", index: 3, total: 7, steps: 30 });
    const follower = followMetricsSteps(path, (step) => phase.step(step), { intervalMs: 50 });
    const result = await runChild({
      argv: ["bash", fixture("write_metrics.sh"), path, "21", "30"],
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
    });
    equal(result.status, "ok");
    equal(await follower.stop(), 30);
    phase.end(result.status, result.wallS);
    const text = output.join("");
    ok(!text.includes("started"), "no start line off a terminal");
    ok(text.endsWith(`phase resume-native ok in ${result.wallS.toFixed(1)}\u00a0s\n`), text);
    const steps = [...text.matchAll(/step (\d+)\/30/g)].map((m) => Number(m[1]));
    ok(steps.length >= 1 && steps.at(-1) === 30, text);
    deepEqual(steps, [...steps].sort((a, b) => a - b), "steps only go up");
    ok(steps[0] >= 21);
  });
});

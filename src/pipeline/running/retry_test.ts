import { deepEqual, equal, rejects } from "node:assert/strict";
import { join } from "node:path";
import { listAttempts, moveAttemptAside, shouldRetry } from "./retry.ts";

const NCCL = { attempts: 3, on: ["NCCL (timeout|error)", "^CUDA out of memory"] };
const TAIL = "step 1\nRuntimeError: NCCL timeout in allreduce\nexiting";

Deno.test("shouldRetry() retries a failed phase whose log tail matches, naming the regex", () => {
  deepEqual(shouldRetry(NCCL, 1, "failed", TAIL), {
    retry: true,
    matched: "NCCL (timeout|error)",
    match: "NCCL timeout",
  });
  equal(shouldRetry(NCCL, 2, "timeout", TAIL).retry, true);
});

Deno.test("shouldRetry() never retries an ok phase, even when the tail matches", () => {
  deepEqual(shouldRetry(NCCL, 1, "ok", TAIL), { retry: false });
});

Deno.test("shouldRetry() stops once the attempt count is reached", () => {
  equal(shouldRetry(NCCL, 3, "failed", TAIL).retry, false);
  equal(shouldRetry(NCCL, 4, "failed", TAIL).retry, false);
  equal(shouldRetry({ attempts: 1, on: ["NCCL"] }, 1, "failed", TAIL).retry, false);
});

Deno.test("shouldRetry() does not retry without a policy or without a matching regex", () => {
  deepEqual(shouldRetry(undefined, 1, "failed", TAIL), { retry: false });
  deepEqual(shouldRetry(NCCL, 1, "failed", "AssertionError: loss mismatch"), { retry: false });
});

Deno.test("shouldRetry() matches ^ and $ at line boundaries of the tail", () => {
  const tail = "loading\nCUDA out of memory. Tried to allocate 2 GiB\nbye";
  deepEqual(shouldRetry(NCCL, 1, "failed", tail).matched, "^CUDA out of memory");
  // Not at a line start: the anchored regex does not match.
  equal(shouldRetry(NCCL, 1, "failed", "error: CUDA out of memory").retry, false);
});

Deno.test("shouldRetry() skips a regex that does not compile and tries the next", () => {
  deepEqual(shouldRetry({ attempts: 2, on: ["(bad", "exiting$"] }, 1, "failed", TAIL), {
    retry: true,
    matched: "exiting$",
    match: "exiting",
  });
});

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "retry_test_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
}

Deno.test("moveAttemptAside() moves a failed attempt's files into attempt-<n>, leaving a clean folder", async () => {
  await withTempDir(async (dir) => {
    const phase = join(dir, "split");
    await Deno.mkdir(join(phase, "checkpoints", "global_step20"), { recursive: true });
    await Deno.writeTextFile(join(phase, "checkpoints", "global_step20", "rank0.pt"), "partial");
    await Deno.writeTextFile(join(phase, "stdout.log"), "first try\n");
    await Deno.writeTextFile(join(phase, "metrics.jsonl"), '{"step":1,"loss":2}\n');
    await Deno.writeTextFile(join(phase, "phase.json"), '{"status":"failed"}');

    const first = await moveAttemptAside(phase, 1);
    equal(first, join(phase, "attempt-1"));
    deepEqual(await names(phase), ["attempt-1"]);
    deepEqual(await names(first), ["checkpoints", "metrics.jsonl", "phase.json", "stdout.log"]);
    equal(
      await Deno.readTextFile(join(first, "checkpoints", "global_step20", "rank0.pt")),
      "partial",
    );

    await Deno.writeTextFile(join(phase, "stdout.log"), "second try\n");
    const second = await moveAttemptAside(phase, 2);
    deepEqual(await names(phase), ["attempt-1", "attempt-2"]);
    deepEqual(await names(second), ["stdout.log"]);
    equal(await Deno.readTextFile(join(second, "stdout.log")), "second try\n");
    equal(await Deno.readTextFile(join(first, "stdout.log")), "first try\n");
    deepEqual(await listAttempts(phase), [first, second]);
  });
});

Deno.test("moveAttemptAside() called again after an interrupted move never overwrites", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(join(dir, "attempt-1"));
    await Deno.writeTextFile(join(dir, "attempt-1", "stdout.log"), "moved before the crash\n");
    await Deno.writeTextFile(join(dir, "stdout.log"), "written after\n");
    await moveAttemptAside(dir, 1);
    deepEqual(await names(join(dir, "attempt-1")), ["stdout.log", "stdout.log.1"]);
    equal(
      await Deno.readTextFile(join(dir, "attempt-1", "stdout.log")),
      "moved before the crash\n",
    );
    equal(await Deno.readTextFile(join(dir, "attempt-1", "stdout.log.1")), "written after\n");
  });
});

Deno.test("moveAttemptAside() rejects an attempt number that is not a positive integer", async () => {
  await withTempDir(async (dir) => {
    await rejects(moveAttemptAside(dir, 0), RangeError);
    await rejects(moveAttemptAside(dir, 1.5), RangeError);
  });
});

Deno.test("listAttempts() orders attempt folders numerically and ignores a missing phase folder", async () => {
  await withTempDir(async (dir) => {
    for (const n of [10, 2, 1]) await Deno.mkdir(join(dir, `attempt-${n}`));
    await Deno.writeTextFile(join(dir, "attempt-3"), "a file, not an attempt folder");
    deepEqual(await listAttempts(dir), [1, 2, 10].map((n) => join(dir, `attempt-${n}`)));
    deepEqual(await listAttempts(join(dir, "missing")), []);
  });
});

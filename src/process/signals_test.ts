import { deepEqual, equal, ok } from "node:assert/strict";
import { runChild } from "./run_child.ts";
import {
  exitCodeForSignal,
  installSignalHandlers,
  interruption,
  liveChildren,
  resetInterruption,
  shutdown,
} from "./signals.ts";
import { findProcesses, uniqueMarker, waitForNoProcesses } from "../../test/_testing/proc_table.ts";
import { LineSplitter } from "./_line_splitter.ts";

const program = (name: string) => new URL(`../../test/programs/${name}`, import.meta.url).pathname;

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "signals_test_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Start test/programs/harness.ts, wait for its child to be up, send `signal`, return exit code and record. */
async function interruptHarness(signal: Deno.Signal, dir: string, marker: string) {
  const harness = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", program("harness.ts"), `${dir}/record.json`, marker, `${dir}/logs`],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  // Never let a broken harness hang the suite.
  const guard = setTimeout(() => harness.kill("SIGKILL"), 20_000);
  try {
    const reader = harness.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const splitter = new LineSplitter();
    let ready = false;
    while (!ready) {
      const { value, done } = await reader.read();
      if (done) break;
      ready = splitter.push(value).includes("child-ready");
    }
    ok(ready, "harness never reported its child as ready");
    // The grandchildren may still be starting when "ready" is printed.
    const grandchildren = async () =>
      (await findProcesses(marker)).filter((p) =>
        p.argv[0].endsWith("-grandchild-1") || p.argv[0].endsWith("-grandchild-2")
      );
    const deadline = performance.now() + 3000;
    while ((await grandchildren()).length < 2 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    equal((await grandchildren()).length, 2, "both grandchildren are running");
    Deno.kill(harness.pid, signal);
    while (!(await reader.read()).done) { /* drain until the harness exits */ }
    const status = await harness.status;
    const record = JSON.parse(await Deno.readTextFile(`${dir}/record.json`));
    return { code: status.code, record };
  } finally {
    clearTimeout(guard);
  }
}

Deno.test("SIGTERM to a harness stops its child group, records the interruption and exits 143", async () => {
  await withTempDir(async (dir) => {
    const marker = uniqueMarker("sigterm");
    const { code, record } = await interruptHarness("SIGTERM", dir, marker);
    equal(code, 143);
    equal(record.interruption.reason, "SIGTERM");
    equal(record.interruption.exitCode, 143);
    equal(record.result.status, "interrupted");
    equal(record.result.message, "interrupted by SIGTERM");
    equal(record.result.logTail, "ready");
    equal(record.later.status, "interrupted");
    equal(record.later.pid, null, "no child may start after the interruption");
    deepEqual(await waitForNoProcesses(marker), []);
  });
});

Deno.test("SIGINT to a harness stops its child group and exits 130", async () => {
  await withTempDir(async (dir) => {
    const marker = uniqueMarker("sigint");
    const { code, record } = await interruptHarness("SIGINT", dir, marker);
    equal(code, 130);
    equal(record.interruption.reason, "SIGINT");
    equal(record.result.status, "interrupted");
    equal(record.result.message, "interrupted by SIGINT");
    deepEqual(await waitForNoProcesses(marker), []);
  });
});

Deno.test("a harness with signal handlers installed exits normally once no child runs", async () => {
  const harness = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", program("idle_exit.ts")],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const guard = setTimeout(() => harness.kill("SIGKILL"), 10_000);
  try {
    const output = await harness.output();
    equal(output.code, 0, new TextDecoder().decode(output.stderr));
    equal(new TextDecoder().decode(output.stdout), "ok exited with code 0\n");
  } finally {
    clearTimeout(guard);
  }
});

Deno.test("Deno.exit() with a child still running kills the child group on unload", async () => {
  await withTempDir(async (dir) => {
    const marker = uniqueMarker("unload");
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", program("exit_mid_run.ts"), marker, dir],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    equal(output.code, 7, new TextDecoder().decode(output.stderr));
    equal(await Deno.readTextFile(`${dir}/stdout.log`), "ready\n");
    deepEqual(await waitForNoProcesses(marker), []);
  });
});

Deno.test("a third signal exits a harness whose onInterrupt is stuck", async () => {
  const harness = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", program("stuck_harness.ts")],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = harness.stdout.pipeThrough(new TextDecoderStream()).getReader();
  equal((await reader.read()).value, "armed\n");
  for (let i = 0; i < 3; i++) {
    Deno.kill(harness.pid, "SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  while (!(await reader.read()).done) { /* until it exits */ }
  equal((await harness.status).code, 143);
});

Deno.test("shutdown() interrupts live children, refuses new ones and exposes the exit code", async () => {
  await withTempDir(async (dir) => {
    const marker = uniqueMarker("shutdown");
    let shutdownPromise: Promise<unknown> | undefined;
    try {
      const result = await runChild({
        argv: ["bash", program("hang_with_children.sh"), marker],
        graceMs: 2000,
        timeoutMs: 20_000,
        stdoutPath: `${dir}/stdout.log`,
        stderrPath: `${dir}/stderr.log`,
        onLine: (_stream, line) => {
          if (line === "ready") {
            equal(liveChildren().length, 1);
            shutdownPromise = shutdown("SIGTERM");
          }
        },
      });
      equal(result.status, "interrupted");
      equal(result.message, "interrupted by SIGTERM");
      equal(result.signal, "SIGTERM");
      const recorded = await shutdownPromise;
      deepEqual(recorded, interruption());
      equal(interruption()?.exitCode, 143);
      deepEqual(liveChildren(), []);
      deepEqual(await findProcesses(marker), []);

      const refused = await runChild({
        argv: ["bash", program("echo_lines.sh"), "1"],
        stdoutPath: `${dir}/stdout.log`,
        stderrPath: `${dir}/stderr.log`,
      });
      equal(refused.status, "interrupted");
      equal(refused.message, "not started: harness interrupted by SIGTERM");
      equal(refused.pid, null);
    } finally {
      await resetInterruption();
    }
    equal(interruption(), null);
    const afterReset = await runChild({
      argv: ["bash", program("echo_lines.sh"), "1"],
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
    });
    equal(afterReset.status, "ok");
  });
});

Deno.test("a second shutdown() SIGKILLs children still inside their grace period", async () => {
  await withTempDir(async (dir) => {
    const marker = uniqueMarker("escalate");
    const calls: string[] = [];
    const uninstall = installSignalHandlers({
      graceMs: 15_000,
      onInterrupt: (i) => void calls.push(`${i.reason}:${i.exitCode}`),
    });
    try {
      const started = performance.now();
      const result = await runChild({
        argv: ["bash", program("ignore_term.sh"), marker],
        stdoutPath: `${dir}/stdout.log`,
        stderrPath: `${dir}/stderr.log`,
        onLine: (_stream, line) => {
          if (line !== "ready") return;
          void shutdown("SIGINT");
          setTimeout(() => void shutdown("SIGINT"), 300);
        },
      });
      const elapsedS = (performance.now() - started) / 1000;
      equal(result.status, "interrupted");
      equal(result.signal, "SIGKILL");
      ok(elapsedS < 5, `the second shutdown must not wait for the 15 s grace (took ${elapsedS} s)`);
      await shutdown("SIGINT"); // same promise; onInterrupt has run exactly once
      deepEqual(calls, ["SIGINT:130"]);
      deepEqual(await waitForNoProcesses(marker), []);
    } finally {
      uninstall();
      await resetInterruption();
    }
  });
});

Deno.test("exitCodeForSignal() follows the 128 + signal number convention", () => {
  equal(exitCodeForSignal("SIGINT"), 130);
  equal(exitCodeForSignal("SIGTERM"), 143);
  equal(exitCodeForSignal("SIGHUP"), 129);
  equal(exitCodeForSignal("user request"), 130);
});

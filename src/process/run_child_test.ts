import { deepEqual, equal, match, ok } from "node:assert/strict";
import { type OutputStream, runChild } from "./run_child.ts";
import { findProcesses, uniqueMarker, waitForNoProcesses } from "../../test/_testing/proc_table.ts";
import { liveChildren } from "./signals.ts";

const fixture = (name: string) => new URL(`../../test/programs/${name}`, import.meta.url).pathname;

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "run_child_test_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function collector() {
  const lines: Array<[OutputStream, string]> = [];
  return { lines, onLine: (stream: OutputStream, line: string) => lines.push([stream, line]) };
}

Deno.test("runChild() streams stdout and stderr lines in order, each logged while the child runs", async () => {
  await withTempDir(async (dir) => {
    const { lines, onLine } = collector();
    const stdoutPath = `${dir}/phase/stdout.log`;
    const stderrPath = `${dir}/phase/stderr.log`;
    const result = await runChild({
      // The child waits for each line to appear in its log before writing the next one.
      argv: ["bash", fixture("handshake_lines.sh"), stdoutPath, stderrPath, "5"],
      stdoutPath,
      stderrPath,
      onLine,
    });
    equal(result.status, "ok", result.logTail);
    equal(result.exitCode, 0);
    equal(result.signal, null);
    equal(result.message, "exited with code 0");
    ok(result.pid !== null && result.pid > 0);
    ok(result.wallS > 0 && result.wallS < 10, `wallS ${result.wallS}`);
    const expected: Array<[OutputStream, string]> = [];
    for (let i = 1; i <= 5; i++) expected.push(["stdout", `out ${i}`], ["stderr", `err ${i}`]);
    deepEqual(lines, expected);
    equal(await Deno.readTextFile(stdoutPath), "out 1\nout 2\nout 3\nout 4\nout 5\n");
    equal(await Deno.readTextFile(stderrPath), "err 1\nerr 2\nerr 3\nerr 4\nerr 5\n");
    equal(result.logTail, expected.map(([, line]) => line).join("\n"));
    deepEqual(liveChildren(), []);
  });
});

Deno.test("runChild() has a line in its log before onLine sees it", async () => {
  await withTempDir(async (dir) => {
    const stdoutPath = `${dir}/stdout.log`;
    const missing: string[] = [];
    await runChild({
      argv: ["bash", fixture("echo_lines.sh"), "3"],
      stdoutPath,
      stderrPath: `${dir}/stderr.log`,
      onLine: (stream, line) => {
        if (stream === "stdout" && !Deno.readTextFileSync(stdoutPath).includes(`${line}\n`)) {
          missing.push(line);
        }
      },
    });
    deepEqual(missing, []);
  });
});

Deno.test("runChild() appends to existing log files", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/stdout.log`, "earlier attempt\n");
    await runChild({
      argv: ["bash", fixture("echo_lines.sh"), "1"],
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
    });
    equal(await Deno.readTextFile(`${dir}/stdout.log`), "earlier attempt\nout 1\n");
  });
});

Deno.test("runChild() reports a non-zero exit as failed with the last stderr lines in the tail", async () => {
  await withTempDir(async (dir) => {
    const result = await runChild({
      argv: ["bash", fixture("fail.sh"), "1", "60"],
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
    });
    equal(result.status, "failed");
    equal(result.exitCode, 1);
    equal(result.signal, null);
    equal(result.message, "exited with code 1");
    // stdout and stderr are separate pipes: only the stderr lines have a fixed order.
    const tail = result.logTail.split("\n").filter((line) => line !== "starting");
    equal(tail.at(-1), "fatal: giving up with code 1");
    equal(tail.at(-2), "stderr line 60");
    ok(tail.length <= 40 && tail.length >= 30, `tail has ${tail.length} lines`);
    deepEqual(tail.slice(-5, -1), [57, 58, 59, 60].map((i) => `stderr line ${i}`));
    ok(!result.logTail.includes("stderr line 1\n"), "oldest lines are dropped");
    ok(result.logTail.length <= 4096);
    // The log itself keeps everything.
    equal((await Deno.readTextFile(`${dir}/stderr.log`)).split("\n").length, 62);
  });
});

Deno.test("runChild() passes the exact exit code through", async () => {
  await withTempDir(async (dir) => {
    const result = await runChild({
      argv: ["bash", fixture("fail.sh"), "42", "1"],
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
    });
    equal(result.status, "failed");
    equal(result.exitCode, 42);
    equal(result.message, "exited with code 42");
  });
});

Deno.test("runChild() turns a missing executable into a failed result", async () => {
  await withTempDir(async (dir) => {
    const missing = `no-such-trainer-${crypto.randomUUID()}`;
    const result = await runChild({
      argv: [missing, "--steps", "3"],
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
    });
    equal(result.status, "failed");
    equal(result.message, `executable not found: ${missing}`);
    equal(result.pid, null);
    equal(result.exitCode, null);
    equal(result.logTail, "");
  });
});

Deno.test("runChild() reports a missing working directory without spawning", async () => {
  await withTempDir(async (dir) => {
    const result = await runChild({
      argv: ["bash", fixture("env_and_cwd.sh")],
      cwd: `${dir}/missing`,
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
    });
    equal(result.status, "failed");
    equal(result.message, `working directory not found: ${dir}/missing`);
    equal(result.pid, null);
  });
});

Deno.test("runChild() applies env, clearEnv and cwd", async () => {
  await withTempDir(async (dir) => {
    const merged = collector();
    await runChild({
      argv: ["bash", fixture("env_and_cwd.sh")],
      env: { PARITY_PROBE: "42" },
      cwd: dir,
      stdoutPath: `${dir}/a.log`,
      stderrPath: `${dir}/b.log`,
      onLine: merged.onLine,
    });
    deepEqual(merged.lines.map(([, line]) => line), [
      `cwd=${await Deno.realPath(dir)}`,
      "probe=42",
      `home=${Deno.env.get("HOME") ?? "<unset>"}`,
    ]);
    const cleared = collector();
    await runChild({
      argv: ["/bin/bash", fixture("env_and_cwd.sh")],
      env: { PARITY_PROBE: "7" },
      clearEnv: true,
      stdoutPath: `${dir}/a.log`,
      stderrPath: `${dir}/b.log`,
      onLine: cleared.onLine,
    });
    deepEqual(cleared.lines.slice(1).map(([, line]) => line), ["probe=7", "home=<unset>"]);
  });
});

Deno.test("runChild() flushes a last line that has no trailing newline", async () => {
  await withTempDir(async (dir) => {
    const { lines, onLine } = collector();
    const result = await runChild({
      argv: ["bash", fixture("partial_line.sh")],
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
      onLine,
    });
    equal(result.status, "ok");
    deepEqual(lines.filter(([s]) => s === "stdout"), [
      ["stdout", "first line"],
      ["stdout", "last line without newline"],
    ]);
    deepEqual(lines.filter(([s]) => s === "stderr"), [
      ["stderr", "err line"],
      ["stderr", "err tail without newline"],
    ]);
    equal(await Deno.readTextFile(`${dir}/stdout.log`), "first line\nlast line without newline");
    ok(result.logTail.includes("last line without newline"));
  });
});

Deno.test("runChild() times out a hanging child and leaves no grandchild behind", async () => {
  await withTempDir(async (dir) => {
    const marker = uniqueMarker("hang");
    const { lines, onLine } = collector();
    const result = await runChild({
      argv: ["bash", fixture("hang_with_children.sh"), marker],
      timeoutMs: 1000,
      graceMs: 2000,
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
      onLine,
    });
    equal(result.status, "timeout");
    equal(result.message, "timed out after 1 s");
    equal(result.signal, "SIGTERM");
    equal(result.exitCode, null);
    ok(result.wallS >= 1 && result.wallS < 2.5, `wallS ${result.wallS}`);
    deepEqual(lines, [["stdout", "ready"]]);
    equal(result.logTail, "ready");
    deepEqual(await findProcesses(marker), []);
  });
});

Deno.test("runChild() SIGKILLs a child that ignores SIGTERM after the grace period", async () => {
  await withTempDir(async (dir) => {
    const marker = uniqueMarker("stubborn");
    const result = await runChild({
      argv: ["bash", fixture("ignore_term.sh"), marker],
      timeoutMs: 500,
      graceMs: 700,
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
    });
    equal(result.status, "timeout");
    equal(result.signal, "SIGKILL");
    equal(result.message, "timed out after 0.5 s (SIGKILL after 0.7 s grace)");
    ok(result.wallS >= 1.2 && result.wallS < 3, `wallS ${result.wallS}`);
    deepEqual(await waitForNoProcesses(marker), []);
  });
});

Deno.test("runChild() reports a leader killed with SIGKILL mid-run and reaps its group", async () => {
  await withTempDir(async (dir) => {
    const marker = uniqueMarker("kill9");
    let killed = false;
    const result = await runChild({
      argv: ["bash", fixture("report_pid_and_hang.sh"), marker],
      timeoutMs: 20_000,
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
      onLine: (_stream, line) => {
        const pid = /^pid (\d+)$/.exec(line)?.[1];
        if (pid !== undefined && !killed) {
          killed = true;
          Deno.kill(Number(pid), "SIGKILL"); // only the leader, like an OOM killer would
        }
      },
    });
    ok(killed);
    equal(result.status, "failed");
    equal(result.signal, "SIGKILL");
    equal(result.exitCode, null);
    equal(result.message, "killed by signal SIGKILL");
    ok(result.wallS < 5, `wallS ${result.wallS}`);
    deepEqual(await waitForNoProcesses(marker), []);
  });
});

Deno.test("runChild() stops the child when the caller aborts", async () => {
  await withTempDir(async (dir) => {
    const marker = uniqueMarker("abort");
    const controller = new AbortController();
    const result = await runChild({
      argv: ["bash", fixture("hang_with_children.sh"), marker],
      graceMs: 1000,
      signal: controller.signal,
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
      onLine: (_stream, line) => line === "ready" && controller.abort(),
    });
    equal(result.status, "interrupted");
    equal(result.message, "interrupted: aborted by caller");
    deepEqual(await findProcesses(marker), []);
    const again = await runChild({
      argv: ["bash", fixture("echo_lines.sh"), "1"],
      signal: controller.signal,
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
    });
    equal(again.status, "interrupted");
    equal(again.pid, null);
  });
});

Deno.test("runChild() keeps supervising when onLine throws", async () => {
  await withTempDir(async (dir) => {
    const originalError = console.error;
    const errors: string[] = [];
    console.error = (...args: unknown[]) => errors.push(args.join(" "));
    try {
      const result = await runChild({
        argv: ["bash", fixture("echo_lines.sh"), "3"],
        stdoutPath: `${dir}/stdout.log`,
        stderrPath: `${dir}/stderr.log`,
        onLine: () => {
          throw new Error("observer bug");
        },
      });
      equal(result.status, "ok");
      equal(result.logTail.split("\n").length, 6);
      equal(errors.length, 1);
      match(errors[0], /observer bug/);
    } finally {
      console.error = originalError;
    }
  });
});

Deno.test("runChild() rejects an empty argv", async () => {
  await withTempDir(async (dir) => {
    let error: unknown;
    try {
      await runChild({ argv: [], stdoutPath: `${dir}/o`, stderrPath: `${dir}/e` });
    } catch (e) {
      error = e;
    }
    ok(error instanceof TypeError);
  });
});

Deno.test("runChild() stops reading when a process outside the group keeps the pipe open", async () => {
  await withTempDir(async (dir) => {
    const marker = uniqueMarker("escaped");
    try {
      const result = await runChild({
        argv: ["bash", fixture("escape_group.sh"), marker],
        stdoutPath: `${dir}/stdout.log`,
        stderrPath: `${dir}/stderr.log`,
      });
      equal(result.status, "ok");
      equal(
        result.message,
        "exited with code 0; output abandoned: a process outside the group kept the pipe open",
      );
      equal(result.logTail, "leader done");
      ok(result.wallS >= 2 && result.wallS < 4, `wallS ${result.wallS}`);
    } finally {
      // setsid put it beyond the supervisor's reach; clean it up by its marker.
      for (const { pid } of await findProcesses(marker)) Deno.kill(pid, "SIGKILL");
    }
    deepEqual(await waitForNoProcesses(marker), []);
  });
});

Deno.test("runChild() treats an Infinity or huge timeout as no early timeout", async () => {
  await withTempDir(async (dir) => {
    for (const timeoutMs of [Infinity, 40 * 24 * 3600 * 1000]) {
      const result = await runChild({
        argv: ["bash", fixture("echo_lines.sh"), "2"],
        timeoutMs,
        graceMs: Infinity,
        stdoutPath: `${dir}/stdout.log`,
        stderrPath: `${dir}/stderr.log`,
      });
      equal(result.status, "ok", `timeoutMs ${timeoutMs}: ${result.message}`);
    }
  });
});

Deno.test("runChild() rejects a negative or NaN timeout before spawning", async () => {
  await withTempDir(async (dir) => {
    for (const timeoutMs of [-1, Number.NaN]) {
      let error: unknown;
      try {
        await runChild({
          argv: ["true"],
          timeoutMs,
          stdoutPath: `${dir}/o`,
          stderrPath: `${dir}/e`,
        });
      } catch (e) {
        error = e;
      }
      ok(error instanceof RangeError, `timeoutMs ${timeoutMs}`);
    }
  });
});

Deno.test("runChild() honours its timeout while a child floods one endless line, logs capped", async () => {
  await withTempDir(async (dir) => {
    const stdoutPath = `${dir}/stdout.log`;
    const result = await runChild({
      // An endless line without a newline (a progress bar gone wrong).
      argv: ["sh", "-c", "yes aaaaaaaaaaaaaaaa | tr -d '\\n'"],
      stdoutPath,
      stderrPath: `${dir}/stderr.log`,
      timeoutMs: 1500,
      graceMs: 500,
      logCapBytes: 1024 * 1024,
    });
    equal(result.status, "timeout", result.message);
    ok(result.wallS < 10, `stopped after ${result.wallS} s`);
    ok((await Deno.stat(stdoutPath)).size <= 1024 * 1024, "the log stays under its cap");
    ok((await Deno.stat(`${stdoutPath}.1`)).size <= 1024 * 1024, "the previous part is kept");
    match(result.message, /older output dropped/);
    ok(result.logTail.length < 8192, "the tail stays small");
  });
});

Deno.test("runChild() stops a flooding child on abort (SIGINT path) promptly", async () => {
  await withTempDir(async (dir) => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 1000);
    const result = await runChild({
      argv: ["sh", "-c", "yes 'x\r' | tr -d '\\n'"],
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
      graceMs: 500,
      logCapBytes: 4 * 1024 * 1024,
      signal: controller.signal,
    });
    equal(result.status, "interrupted", result.message);
    ok(result.wallS < 10, `stopped after ${result.wallS} s`);
  });
});

Deno.test("runChild() ends lines at a lone \\r, as a progress bar writes them", async () => {
  await withTempDir(async (dir) => {
    const { lines, onLine } = collector();
    await runChild({
      argv: ["printf", " 10%%\\r 50%%\\r100%%\\ndone\\n"],
      stdoutPath: `${dir}/stdout.log`,
      stderrPath: `${dir}/stderr.log`,
      onLine,
    });
    deepEqual(lines.map(([, line]) => line), [" 10%", " 50%", "100%", "done"]);
  });
});

/**
 * A minimal harness for signal tests: runs `hang_with_children.sh MARKER` under runChild with
 * signal handlers installed, prints "child-ready" once the child is up, and on SIGINT/SIGTERM
 * writes RECORD_PATH (JSON: interruption, child result, whether a later child was refused) and
 * exits with the interruption's code.
 *
 * Usage: deno run -A harness.ts RECORD_PATH MARKER LOG_DIR
 *
 * @module
 */

import { installSignalHandlers, runChild, shutdown } from "../../src/process/mod.ts";

const [recordPath, marker, logDir] = Deno.args;
const fixture = new URL("./hang_with_children.sh", import.meta.url).pathname;
const say = (text: string) => Deno.stdout.writeSync(new TextEncoder().encode(text + "\n"));

const resultPromise = runChild({
  argv: ["bash", fixture, marker],
  stdoutPath: `${logDir}/stdout.log`,
  stderrPath: `${logDir}/stderr.log`,
  graceMs: 500,
  onLine: (_stream, line) => {
    if (line === "ready") say("child-ready");
  },
});

installSignalHandlers({
  onInterrupt: async (interruption) => {
    const result = await resultPromise;
    // A phase scheduled after the interruption must not start.
    const later = await runChild({
      argv: ["bash", fixture, `${marker}-late`],
      stdoutPath: `${logDir}/late.stdout.log`,
      stderrPath: `${logDir}/late.stderr.log`,
    });
    await Deno.writeTextFile(recordPath, JSON.stringify({ interruption, result, later }));
    Deno.exit(interruption.exitCode);
  },
});

// If the test runner dies (killed, timed out), stop too instead of lingering as an orphan.
const parentPid = Deno.ppid;
const parentWatch = setInterval(() => {
  if (Deno.ppid !== parentPid) void shutdown("parent exited");
}, 250);

const result = await resultPromise;
clearInterval(parentWatch);
say(`child ended: ${result.message}`);

/**
 * Starts `hang_with_children.sh MARKER` and calls Deno.exit(7) once it is up, without installing
 * signal handlers: the `unload` hook of the supervisor must still take the child group down.
 *
 * Usage: deno run -A exit_mid_run.ts MARKER LOG_DIR
 *
 * @module
 */

import { runChild } from "../../src/process/mod.ts";

const [marker, logDir] = Deno.args;
void runChild({
  argv: ["bash", new URL("./hang_with_children.sh", import.meta.url).pathname, marker],
  stdoutPath: `${logDir}/stdout.log`,
  stderrPath: `${logDir}/stderr.log`,
  timeoutMs: 60_000,
  onLine: (_stream, line) => {
    if (line === "ready") Deno.exit(7);
  },
});

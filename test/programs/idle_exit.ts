/**
 * Installs signal handlers, runs one short child and then simply ends: the process must exit by
 * itself (the handlers' OS listeners must not keep the event loop alive once no child runs).
 *
 * @module
 */

import { installSignalHandlers, runChild } from "../../src/process/mod.ts";

installSignalHandlers({ onInterrupt: (i) => Deno.exit(i.exitCode) });
const logDir = await Deno.makeTempDir({ prefix: "idle_exit_" });
try {
  const result = await runChild({
    argv: ["bash", new URL("./echo_lines.sh", import.meta.url).pathname, "1"],
    stdoutPath: `${logDir}/stdout.log`,
    stderrPath: `${logDir}/stderr.log`,
  });
  console.log(result.status, result.message);
} finally {
  await Deno.remove(logDir, { recursive: true });
}

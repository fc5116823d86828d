/**
 * A harness whose onInterrupt never finishes: prints "armed" once its handlers listen, and must
 * still be stoppable by a third signal.
 *
 * Usage: deno run -A stuck_harness.ts
 *
 * @module
 */

import { installSignalHandlers } from "../../src/process/mod.ts";

installSignalHandlers({
  listenWhileIdle: true,
  onInterrupt: () => new Promise<void>(() => {}), // stuck forever
});
console.log("armed");
// Keep running on its own for at most 20 s, in case the test that drives it dies.
setTimeout(() => Deno.exit(99), 20_000);

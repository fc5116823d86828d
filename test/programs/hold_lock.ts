/**
 * Test helper: takes the run lock of a folder in a real process, holds it, releases it.
 *
 * `deno run -A hold_lock.ts <experimentDir> <holdMs> <wait|nowait>` prints one JSON event per line
 * (`waiting`, `acquired`, `took-over`, `released`, `held`) with a `t` timestamp (ms since epoch).
 * Exit code 0 after a release, 3 when the lock was held and `nowait` was given.
 *
 * @module
 */

import { acquireRunLock, LockHeldError } from "../../src/pipeline/store/lock.ts";

const [dir, holdMs, mode] = Deno.args;
const emit = (event: string, extra: Record<string, unknown> = {}) =>
  console.log(JSON.stringify({ event, pid: Deno.pid, t: Date.now(), ...extra }));

try {
  const lock = await acquireRunLock(dir, {
    wait: mode === "wait",
    pollMs: 50,
    onWait: (h) => emit("waiting", { holder: h.pid }),
    onTakeover: (h, reason) => emit("took-over", { holder: h.pid, reason }),
  });
  emit("acquired");
  await new Promise((r) => setTimeout(r, Number(holdMs)));
  emit("releasing");
  const removed = await lock.release();
  emit("released", { removed });
} catch (e) {
  if (!(e instanceof LockHeldError)) throw e;
  emit("held", { message: e.message, holder: e.holder.pid });
  Deno.exit(3);
}

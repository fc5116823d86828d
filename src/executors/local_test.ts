import assert from "node:assert/strict";
import { join } from "node:path";
import { phaseFixture, recordingContext } from "./_testing.ts";
import { LOCAL_FILES, localExecutor } from "./local.ts";

Deno.test("localExecutor: runs the phase as a child, logs and pid in its folder", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const phase = phaseFixture(
      dir,
      ["sh", "-c", 'echo "out $PARITY_TEST"; echo err >&2; exit 3'],
      { kind: "local" },
    );
    await Deno.mkdir(phase.paths.dir, { recursive: true });
    const executor = localExecutor({ kind: "local" });
    assert.equal(executor.reattach, undefined, "a child dies with its harness");
    const result = await executor.run(phase, recordingContext());
    assert.equal(result.status, "failed");
    assert.equal(result.exitCode, 3);
    assert.equal(result.infra, false);
    assert.equal(result.slurm, undefined);
    assert.match(result.logTail, /out 1/);
    assert.equal(await Deno.readTextFile(join(phase.paths.dir, "stdout.log")), "out 1\n");
    assert.equal(await Deno.readTextFile(join(phase.paths.dir, "stderr.log")), "err\n");
    const pid = Number((await Deno.readTextFile(join(phase.paths.dir, LOCAL_FILES.pid))).trim());
    assert.ok(Number.isInteger(pid) && pid > 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

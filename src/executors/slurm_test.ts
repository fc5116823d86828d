import assert from "node:assert/strict";
import { join } from "node:path";
import type { SlurmExecutorSpec } from "../types/phase_spec.ts";
import { phaseFixture, recordingContext } from "./_testing.ts";
import { SLURM_FILES } from "./run_slurm_job.ts";
import { slurmExecutor } from "./slurm.ts";

const SETTINGS: SlurmExecutorSpec = {
  kind: "slurm",
  extraArgs: [],
  pollS: 0.05,
  srun: false,
  maxJobs: 1,
};

/** `sbatch` that runs the script at once as job 42; `scontrol` that reports it completed. */
const FAKE_CLIENTS: Record<string, string> = {
  sbatch: `#!/bin/sh
for a in "$@"; do
  case "$a" in --output=*) out="\${a#--output=}";; --error=*) err="\${a#--error=}";; esac
  script="$a"
done
sh "$script" >>"$out" 2>>"$err"
echo 42
`,
  scontrol: `#!/bin/sh
[ "$1 $2" = "show job" ] || exit 0
echo "JobId=42 JobName=parity-baseline JobState=COMPLETED Reason=None NodeList=node1 \\
Partition=debug ExitCode=0:0 Restarts=0"
`,
};

async function withFakeSlurm(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  const path = Deno.env.get("PATH") ?? "";
  try {
    await Deno.mkdir(join(dir, "bin"));
    for (const [name, text] of Object.entries(FAKE_CLIENTS)) {
      await Deno.writeTextFile(join(dir, "bin", name), text, { mode: 0o755 });
    }
    Deno.env.set("PATH", `${join(dir, "bin")}:${path}`);
    await fn(dir);
  } finally {
    Deno.env.set("PATH", path);
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("slurmExecutor: submits, records the job with the launch record, follows it", async () => {
  await withFakeSlurm(async (dir) => {
    const phase = phaseFixture(dir, ["sh", "-c", 'echo "job $PARITY_TEST"'], SETTINGS);
    await Deno.mkdir(phase.paths.dir, { recursive: true });
    const ctx = recordingContext({ phase: "baseline", cache_key: "k1" });
    const result = await slurmExecutor(SETTINGS).run(phase, ctx);
    assert.equal(result.status, "ok", result.message);
    assert.equal(result.exitCode, 0);
    assert.equal(result.infra, false);
    assert.equal(result.slurm?.id, "42");
    assert.equal(result.slurm?.state, "COMPLETED");
    assert.equal(await Deno.readTextFile(join(phase.paths.dir, "stdout.log")), "job 1\n");
    const record = ctx.written.get(join(phase.paths.dir, SLURM_FILES.record)) as Record<
      string,
      unknown
    >;
    assert.equal(record.job_id, "42");
    assert.equal(record.cache_key, "k1");
    assert.equal(typeof record.submitted_at, "string");
    assert.deepEqual(ctx.notes, ["baseline: submitted Slurm job 42"]);
  });
});

Deno.test("slurmExecutor: a later harness finds the recorded job and attaches to it", async () => {
  await withFakeSlurm(async (dir) => {
    const phase = phaseFixture(dir, ["true"], SETTINGS);
    const reattach = slurmExecutor(SETTINGS).reattach!;
    assert.equal(await reattach.find(phase.paths.dir), undefined, "no record, nothing to attach");
    await Deno.mkdir(phase.paths.dir, { recursive: true });
    await Deno.writeTextFile(
      join(phase.paths.dir, SLURM_FILES.record),
      JSON.stringify({ job_id: "42", cache_key: "k1", submitted_at: "then" }),
    );
    const launch = await reattach.find(phase.paths.dir);
    assert.deepEqual(launch, { handle: "42", record: { cache_key: "k1", submitted_at: "then" } });
    assert.equal(await reattach.cancel(launch!), false, "an ended job is not cancelled");
    const result = await reattach.attach(phase, launch!, recordingContext());
    assert.equal(result.status, "ok", result.message);
    assert.equal(result.slurm?.id, "42");
  });
});

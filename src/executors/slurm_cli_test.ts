import assert from "node:assert/strict";
import type { SlurmExecutorSpec } from "../types/phase_spec.ts";
import { parseJobRecord, parseNodeRecords, parseSbatchOutput, sbatchArgv } from "./slurm_cli.ts";

const SLURM: SlurmExecutorSpec = {
  kind: "slurm",
  extraArgs: ["--exclusive"],
  pollS: 2,
  srun: false,
  maxJobs: 4,
};

Deno.test("sbatchArgv: options as single argv elements, time from the phase timeout", () => {
  const options = {
    jobName: "parity-baseline",
    script: "/r/p/slurm_job.sh",
    stdoutPath: "/r/p/slurm.out",
    stderrPath: "/r/p/slurm.err",
    cwd: "/r/p",
    timeoutS: 61,
  };
  assert.deepEqual(sbatchArgv(SLURM, options), [
    "sbatch",
    "--parsable",
    "--job-name=parity-baseline",
    "--output=/r/p/slurm.out",
    "--error=/r/p/slurm.err",
    "--open-mode=append",
    "--chdir=/r/p",
    "--export=ALL",
    "--requeue",
    "--time=2",
    "--exclusive",
    "/r/p/slurm_job.sh",
  ]);
  const full = sbatchArgv({
    ...SLURM,
    partition: "gpu",
    nodes: 2,
    gpusPerNode: 8,
    time: "01:30:00",
    account: "ml",
    qos: "high",
  }, options);
  for (const arg of ["--time=01:30:00", "--partition=gpu", "--nodes=2", "--gpus-per-node=8"]) {
    assert.ok(full.includes(arg), arg);
  }
  assert.ok(full.includes("--account=ml") && full.includes("--qos=high"));
});

Deno.test("parseSbatchOutput: plain and cluster-qualified ids", () => {
  assert.equal(parseSbatchOutput("123\n"), "123");
  assert.equal(parseSbatchOutput("456;cluster\n"), "456");
  assert.throws(() => parseSbatchOutput("sbatch: error: x"), /no job id/);
});

Deno.test("parseJobRecord: fields of scontrol show job -o", () => {
  const line = "JobId=7 JobName=parity-split UserId=root(0) JobState=FAILED " +
    "Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=2 BatchFlag=1 ExitCode=3:0 " +
    "Partition=debug NodeList=node[1-2] BatchHost=node1";
  assert.deepEqual(parseJobRecord(line), {
    state: "FAILED",
    reason: "NonZeroExitCode",
    nodes: "node[1-2]",
    partition: "debug",
    exitCode: 3,
    restarts: 2,
  });
  const pending = parseJobRecord("JobId=8 JobState=PENDING Reason=Resources NodeList=(null)");
  assert.equal(pending.nodes, "");
  assert.equal(pending.exitCode, null);
});

Deno.test("parseNodeRecords(): name, state and a reason with spaces", () => {
  const text = "NodeName=node1 Arch=x86_64 State=IDLE ThreadsPerCore=1 CfgTRES=cpu=4\n" +
    "NodeName=node2 Arch=x86_64 State=DOWN+NOT_RESPONDING Weight=1 " +
    "Reason=Not responding [slurm@2026-12-01T20:23:52]\n";
  assert.deepEqual(parseNodeRecords(text), [
    { name: "node1", state: "IDLE", reason: "" },
    {
      name: "node2",
      state: "DOWN+NOT_RESPONDING",
      reason: "Not responding [slurm@2026-12-01T20:23:52]",
    },
  ]);
});

import assert from "node:assert/strict";
import { ExperimentObjectSchema, TrainerArgsSchema } from "../experiment/schema.ts";
import { buildPhaseGraph } from "./phases.ts";
import { phaseCommand, type PhasePaths, REFERENCE_CLI, referenceArgFlags } from "./commands.ts";

function experiment(extra: Record<string, unknown>) {
  return ExperimentObjectSchema.parse({
    name: "cmd",
    seed: 7,
    schedule: { steps: 40, save_at: 20 },
    resume: { native: { from: "native" }, universal: { from: "universal" } },
    ...extra,
  });
}

const reference = experiment({
  trainer: {
    preset: "reference",
    args: {
      world_size: 4,
      ep_size: 2,
      fault: "drop-exp-avg-sq",
      placement: {
        version: 1,
        num_experts: 2,
        ep_size: 2,
        ranks: [{ rank: 0, experts: [0] }, { rank: 1, experts: [1] }],
      },
    },
  },
});

function node(exp: typeof reference, name: string) {
  return buildPhaseGraph(exp).find((n) => n.name === name)!;
}

const paths = (extra: Partial<PhasePaths> = {}): PhasePaths => ({
  dir: "/r/phases/p",
  metricsFile: "/r/phases/p/metrics.jsonl",
  ...extra,
});

Deno.test("referenceArgFlags() turns argument keys into flags and objects into JSON", () => {
  assert.deepEqual(
    referenceArgFlags(TrainerArgsSchema.parse({
      zero_stage: 2,
      world_size: 4,
      placement: { version: 1, num_experts: 1, ep_size: 1, ranks: [] },
      fault: "",
    })),
    [
      "--placement",
      '{"version":1,"num_experts":1,"ep_size":1,"ranks":[]}',
      "--world-size",
      "4",
      "--zero-stage",
      "2",
    ],
  );
});

Deno.test("phaseCommand() expands the reference preset for a split: schedule, save, topology, fault", () => {
  const cmd = phaseCommand(
    reference,
    node(reference, "split"),
    paths({ checkpointDir: "/r/phases/split/checkpoints" }),
    "/exp",
    {},
  );
  assert.deepEqual(cmd.argv.slice(0, 6), [
    Deno.execPath(),
    "run",
    "-A",
    "--quiet",
    REFERENCE_CLI,
    "train",
  ]);
  const flag = (name: string) => cmd.argv[cmd.argv.indexOf(name) + 1];
  assert.equal(flag("--steps"), "40", "the schedule always spans every step");
  assert.equal(flag("--stop-at"), "20");
  assert.equal(flag("--save-at"), "20");
  assert.equal(flag("--checkpoint-dir"), "/r/phases/split/checkpoints");
  assert.equal(flag("--seed"), "7");
  assert.equal(flag("--world-size"), "4");
  assert.equal(flag("--fault"), "drop-exp-avg-sq", "the fault reaches every reference process");
  assert.ok(!cmd.argv.includes("--resume-from"));
  assert.equal(cmd.env.PARITY_SAVE_AT, "20");
  assert.equal(cmd.env.PARITY_RESUME_FROM, "");
  assert.equal(cmd.cwd, "/r/phases/p", "a phase works in its own folder by default");
});

Deno.test("phaseCommand() gives a resume its checkpoint and kind, and the converter its folders", () => {
  const resume = phaseCommand(
    reference,
    node(reference, "resume-universal"),
    paths({ resumeFrom: "/r/phases/convert/u", checkpointDir: "/r/phases/convert" }),
    "/exp",
    {},
  );
  const flag = (name: string) => resume.argv[resume.argv.indexOf(name) + 1];
  assert.equal(flag("--resume-from"), "/r/phases/convert/u");
  assert.equal(flag("--resume-kind"), "universal");
  assert.ok(!resume.argv.includes("--save-at"), "only the split saves");
  assert.equal(resume.env.PARITY_RESUME_KIND, "universal");

  const convert = phaseCommand(
    reference,
    node(reference, "convert"),
    paths({ native: "/r/ck/global_step20", universal: "/r/phases/convert/u" }),
    "/exp",
    {},
  );
  assert.deepEqual(convert.argv.slice(5), [
    "convert",
    "--input_folder",
    "/r/ck/global_step20",
    "--output_folder",
    "/r/phases/convert/u",
    "--fault",
    "drop-exp-avg-sq",
  ]);
});

Deno.test("phaseCommand() interpolates a command template, its env and a relative cwd", () => {
  const exp = experiment({
    trainer: {
      command: [
        "python",
        "train.py",
        "--steps",
        "${steps}",
        "--out",
        "${metrics_file}",
        "--ws",
        "${args.world_size}",
      ],
      env: { HOME_DIR: "${env.HOME}", PHASE_NAME: "${phase}" },
      cwd: "work",
      args: { world_size: 8 },
      timeout: 30,
    },
    converter: { command: ["conv", "${native}", "${universal}"] },
  });
  const cmd = phaseCommand(exp, node(exp, "baseline"), paths(), "/exp", { HOME: "/home/me" });
  assert.deepEqual(cmd.argv, [
    "python",
    "train.py",
    "--steps",
    "40",
    "--out",
    "/r/phases/p/metrics.jsonl",
    "--ws",
    "8",
  ]);
  assert.equal(cmd.env.HOME_DIR, "/home/me");
  assert.equal(cmd.env.PHASE_NAME, "baseline");
  assert.equal(cmd.env.PARITY_METRICS_FILE, "/r/phases/p/metrics.jsonl");
  assert.equal(cmd.cwd, "/exp/work", "relative to the experiment file's folder");
  assert.equal(cmd.timeoutS, 30);
});

/**
 * Raw experiment data for tests (what a parsed YAML file holds), shared by the experiment and CLI
 * tests.
 *
 * @module
 */

/** A valid experiment close to the quickstart, as raw parsed data (a fresh copy each call). */
export function quickstartRaw(): Record<string, unknown> {
  return {
    name: "quickstart",
    schedule: { steps: 40, save_at: 20 },
    trainer: {
      preset: "reference",
      args: { world_size: 4, ep_size: 2, zero_stage: 2, precision: "bf16", grad_accum: 2 },
    },
    resume: {
      native: { from: "native" },
      universal: { from: "universal" },
      reshard: { from: "universal", args: { world_size: 2, ep_size: 1 } },
    },
    plan_sync: { target: { world_size: 2, ep_size: 1 }, policies: ["first_holder", "balanced"] },
  };
}

/** A valid experiment driving an external command trainer. */
export function commandRaw(): Record<string, unknown> {
  return {
    name: "external",
    schedule: { steps: 10, save_at: 5 },
    trainer: {
      command: ["python", "train.py", "--steps", "${steps}", "--ws", "${args.world_size}"],
      args: { world_size: 8 },
      env: { DATA: "${env.HOME}/data" },
      cwd: "${run_dir}",
    },
    converter: {
      command: [
        "python",
        "ds_to_universal.py",
        "--input_folder",
        "${native}",
        "--output_folder",
        "${universal}",
      ],
    },
    resume: { universal: { from: "universal" } },
  };
}

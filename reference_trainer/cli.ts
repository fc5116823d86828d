/**
 * Entry point of the reference trainer: `deno run -A reference_trainer/cli.ts <command> [flags]`
 * (`deno task trainer ...`): `train`, `convert` and `plan`. Commands live in {@link COMMANDS},
 * so another subcommand is one more entry. Exit codes: 0 success, 1 run-time failure (missing, corrupt or
 * unfit checkpoint; refused conversion), 2 usage error. Every failure prints one line on stderr.
 *
 * @module
 */

import {
  CONVERT_FLAGS,
  type FlagSpec,
  HelpRequested,
  helpText,
  parseFlags,
  TRAIN_FLAGS,
  trainOptions,
} from "./args.ts";
import { TRAINER_EXIT_CODES, TrainerExitError, UsageError } from "./model/mod.ts";
import { FAULT_NAMES, isFault } from "./faults.ts";
import { convertToUniversal, CRASH_IN_SAVE_ENV } from "./checkpoints/mod.ts";
import { PLAN_FLAGS, runPlan } from "./resharding_plan.ts";
import { runTrain } from "./trainer.ts";
import { pinToParityCpus } from "./cpu_affinity.ts";

/** Output channels of a command (stderr lines; tests capture them). */
export interface CliIo {
  /** Writes one line to stderr. */
  err: (line: string) => void;
  /** Writes one line to stdout. */
  out: (line: string) => void;
}

/** One subcommand. */
export interface Command {
  /** One-line summary for the top-level help. */
  summary: string;
  /** Accepted flags (for `--help`). */
  flags: readonly FlagSpec[];
  /** Runs the command; resolves to the exit code. */
  run: (argv: string[], env: Record<string, string | undefined>, io: CliIo) => Promise<number>;
}

/** The subcommands, by name. */
export const COMMANDS: Record<string, Command> = {
  train: {
    summary: "train (fresh or resumed), logging metrics and saving native checkpoints",
    flags: TRAIN_FLAGS,
    run: async (argv, env, io) => {
      const values = parseFlags(argv, TRAIN_FLAGS, env);
      const options = trainOptions(values);
      options.crashInSave = env[CRASH_IN_SAVE_ENV] === "1";
      // A device pool's CPU share: the training thread runs on those cores.
      pinToParityCpus(env, io.err);
      await runTrain(options, { log: io.err, out: io.out });
      return TRAINER_EXIT_CODES.OK;
    },
  },
  convert: {
    summary: "convert a native global_step<N> folder to the universal layout",
    flags: CONVERT_FLAGS,
    run: (argv, env, io) => {
      const values = parseFlags(argv, CONVERT_FLAGS, env);
      const input = values.get("input_folder"), output = values.get("output_folder");
      if (!input) throw new UsageError("--input_folder is required");
      if (!output) throw new UsageError("--output_folder is required");
      const fault = values.get("fault") ?? null;
      if (fault !== null && !isFault(fault)) {
        throw new UsageError(`--fault ${fault} is unknown (known: ${FAULT_NAMES.join(", ")})`);
      }
      const out = convertToUniversal({ inputFolder: input, outputFolder: output, fault });
      io.err(`wrote universal checkpoint ${out}`);
      return Promise.resolve(TRAINER_EXIT_CODES.OK);
    },
  },
  plan: {
    summary: "plan the transfer of a native checkpoint onto a target topology (verified plan file)",
    flags: PLAN_FLAGS,
    run: async (argv, env, io) => {
      const values = parseFlags(argv, PLAN_FLAGS, env);
      const verdict = await runPlan(values);
      const s = verdict.stats!;
      io.err(
        `wrote plan ${values.get("out")} (${values.get("policy")}: ${s.parameters} parameters, ` +
          `${s.segments} segments, ${s.movedBytes} bytes moved, ${s.localBytes} local, ` +
          `max process send ${s.maxProcessSendBytes} bytes)`,
      );
      return TRAINER_EXIT_CODES.OK;
    },
  },
};

function topHelp(): string {
  const lines = ["usage: deno task trainer <command> [flags]", "", "commands:"];
  for (const [name, c] of Object.entries(COMMANDS)) lines.push(`  ${name.padEnd(10)} ${c.summary}`);
  lines.push("", "run `deno task trainer <command> --help` for its flags");
  return lines.join("\n");
}

const defaultIo: CliIo = {
  err: (line) => console.error(line),
  out: (line) => console.log(line),
};

/** Runs the CLI with `argv` (without the script name); resolves to the exit code. */
export async function main(
  argv: string[],
  env: Record<string, string | undefined> = Deno.env.toObject(),
  io: CliIo = defaultIo,
): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    (name === undefined ? io.err : io.out)(topHelp());
    return name === undefined ? TRAINER_EXIT_CODES.USAGE : TRAINER_EXIT_CODES.OK;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.err(
      `trainer: error: unknown command ${JSON.stringify(name)} (known: ${
        Object.keys(COMMANDS).join(", ")
      })`,
    );
    return TRAINER_EXIT_CODES.USAGE;
  }
  try {
    return await command.run(rest, env, io);
  } catch (e) {
    if (e instanceof TrainerExitError) {
      if (e instanceof HelpRequested) io.out(helpText(name, command.flags));
      else io.err(`trainer ${name}: error: ${e.message}`);
      return e.exitCode;
    }
    const message = e instanceof Error ? e.message : String(e);
    io.err(`trainer ${name}: error: ${message.split("\n")[0]}`);
    return TRAINER_EXIT_CODES.FAILED;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));

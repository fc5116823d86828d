/**
 * Every harness subcommand, in the order `parity --help` lists them. Adding a subcommand is one
 * file (`<name>_command.ts` exporting a {@linkcode Subcommand}) and one line here.
 *
 * @module
 */

import type { Subcommand } from "./_subcommand.ts";
import { bisectCommand } from "./bisect_command.ts";
import { compareCommand } from "./compare_command.ts";
import { gcCommand } from "./gc_command.ts";
import { goldenCommand } from "./golden_command.ts";
import { historyCommand } from "./history_command.ts";
import { planCommand } from "./plan_command.ts";
import { reportCommand } from "./report_command.ts";
import { rerunCommand } from "./rerun_command.ts";
import { runCommand } from "./run_command.ts";
import { schemaCommand } from "./schema_command.ts";
import { validateCommand } from "./validate_command.ts";
import { verifyPlanCommand } from "./verify_plan_command.ts";

/** The harness subcommands. */
export const SUBCOMMANDS: readonly Subcommand[] = [
  runCommand,
  validateCommand,
  planCommand,
  schemaCommand,
  compareCommand,
  verifyPlanCommand,
  reportCommand,
  historyCommand,
  gcCommand,
  rerunCommand,
  goldenCommand,
  bisectCommand,
];

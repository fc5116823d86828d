/**
 * `parity verify-plan <plan.json> [--execute] [--json]`: verifies a transfer plan file and prints
 * the verdict and its statistics (docs/plan-sync.md). Exit 0 when the plan verifies, 1 when it is
 * rejected, 2 on a usage error or an unreadable or non-JSON file.
 *
 * @module
 */

import { Command } from "commander";
import { formatVerdict, verifyPlan } from "../affine/mod.ts";
import { judgeVerdicts, planVerdict } from "../parity/mod.ts";
import { EXIT_CODES, HarnessError } from "../types/mod.ts";
import { examples, type Subcommand } from "./_subcommand.ts";

/** Builds `parity verify-plan`. */
export const verifyPlanCommand: Subcommand = (exit): Command =>
  new Command("verify-plan")
    .description("verify a transfer plan and print its statistics")
    .argument("<plan.json>", "plan file")
    .option("--execute", "also execute the plan on synthetic data and compare with extract")
    .option("--json", "print the verdict as JSON")
    .addHelpText(
      "after",
      examples([
        "parity verify-plan results/quickstart/latest/phases/plan-balanced/plan.json --execute",
      ]),
    )
    .action(async (path: string, options: { execute?: boolean; json?: boolean }) => {
      let raw: unknown;
      try {
        raw = JSON.parse(await Deno.readTextFile(path));
      } catch (e) {
        throw new HarnessError(
          `cannot read plan ${path}: ${(e as Error).message}`,
          EXIT_CODES.USAGE,
          { cause: e },
        );
      }
      const verdict = verifyPlan(raw, { execute: options.execute ?? false });
      if (options.json) console.log(JSON.stringify({ path, ...verdict }, null, 2));
      else for (const line of formatVerdict(path, verdict)) console.log(line);
      exit(judgeVerdicts([planVerdict(verdict.ok)]).exit_code);
    });

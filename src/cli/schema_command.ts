/**
 * `parity schema`: prints the experiment file JSON Schema (the same document as
 * `experiments/schema.json`).
 *
 * @module
 */

import { Command } from "commander";
import { experimentJsonSchema } from "../experiment/mod.ts";
import type { Subcommand } from "./_subcommand.ts";

/** Builds `parity schema`. */
export const schemaCommand: Subcommand = (exit) =>
  new Command("schema")
    .description("print the experiment file JSON Schema")
    .action(() => {
      console.log(JSON.stringify(experimentJsonSchema(), null, 2));
      exit(0);
    });

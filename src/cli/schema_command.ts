/**
 * `parity schema [--write [path]]`: prints the experiment file JSON Schema, or writes it
 * (`experiments/schema.json` by default) after the zod schema changed.
 *
 * @module
 */

import { Command } from "commander";
import { experimentJsonSchema, writeSchemaFile } from "../experiment/mod.ts";
import { EXIT_CODES } from "../types/mod.ts";
import { examples, type Subcommand } from "./_subcommand.ts";

/** Builds `parity schema`. */
export const schemaCommand: Subcommand = (exit): Command =>
  new Command("schema")
    .description("print the experiment file JSON Schema")
    .option("--write [path]", "write it to a file instead (default: experiments/schema.json)")
    .addHelpText("after", examples(["parity schema --write experiments/schema.json"]))
    .action(async (options: { write?: string | true }) => {
      if (options.write === undefined) {
        console.log(JSON.stringify(experimentJsonSchema(), null, 2));
      } else {
        const path = await writeSchemaFile(options.write === true ? undefined : options.write);
        console.log(`wrote ${path}`);
      }
      exit(EXIT_CODES.PASS);
    });

/**
 * Fuzz test of the experiment loader: random YAML and JSON mutations of the example files,
 * bounded in count and time. Every mutant either loads and validates (and then compiles into a
 * plan) or is refused with a message — never an uncaught exception. The seed is fixed so a
 * failure reproduces; set `PARITY_FUZZ_SEED` (and `PARITY_FUZZ_COUNT`) to explore further.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { loadExperimentText } from "./load.ts";
import { PlaceholderError } from "./placeholders.ts";
import { resolvePlan } from "./plan/resolve_plan.ts";
import { validateExperiment } from "./validate_experiment.ts";
import { ExperimentFileError } from "./validation_errors.ts";
import { seededRandom } from "../../test/_testing/seeded_random.ts";

const ROOT = fileURLToPath(new URL("../../experiments/", import.meta.url));
const SEED = Number(Deno.env.get("PARITY_FUZZ_SEED") ?? 20261130);
const COUNT = Number(Deno.env.get("PARITY_FUZZ_COUNT") ?? 600);
const TIME_BUDGET_MS = 20_000;

/** Fragments that stress YAML and JSON parsers and the schema. */
const TOKENS = [
  "&a ",
  "*a",
  "<<: *a\n",
  "[",
  "]",
  "{",
  "}",
  ": ",
  "- ",
  "\t",
  "\n",
  "!!binary ",
  "!!str ",
  "'",
  '"',
  "#",
  "|\n",
  ">-\n",
  "~",
  "null",
  "1e309",
  "-0",
  "NaN",
  ".inf",
  "0x1F",
  "${",
  "}",
  "${env.HOME}",
  "${steps}",
  "${matrix.x}",
  "\u0000",
  "\uFEFF",
  "é",
  "𝕏",
  "---\n",
  "...\n",
  "? ",
  "%YAML 1.2\n",
  "[[[[[[[[",
  "{a: {b: {c: ",
  "resume:\n  x: {from: native}\n",
  "matrix:\n  trainer.args.world_size: [1, 2, 4]\n",
  "999999999999999999999",
  "true",
  "-",
];

function mutate(text: string, next: () => number): string {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)];
  let out = text;
  const edits = 1 + Math.floor(next() * 4);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(next() * (out.length + 1));
    const span = Math.floor(next() * 40);
    switch (Math.floor(next() * 6)) {
      case 0: // delete a span
        out = out.slice(0, at) + out.slice(at + span);
        break;
      case 1: // insert a token
        out = out.slice(0, at) + pick(TOKENS) + out.slice(at);
        break;
      case 2: // duplicate a span elsewhere
        out = out.slice(0, at) + out.slice(Math.max(0, at - span), at) + out.slice(at);
        break;
      case 3: // flip a character
        out = out.slice(0, at) + String.fromCharCode(32 + Math.floor(next() * 95)) +
          out.slice(at + 1);
        break;
      case 4: // swap two lines
      {
        const lines = out.split("\n");
        const i = Math.floor(next() * lines.length), j = Math.floor(next() * lines.length);
        [lines[i], lines[j]] = [lines[j], lines[i]];
        out = lines.join("\n");
        break;
      }
      default: // truncate
        out = out.slice(0, at);
    }
  }
  return out;
}

async function seeds(): Promise<{ name: string; text: string }[]> {
  const out: { name: string; text: string }[] = [];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) await walk(`${dir}${e.name}/`);
      else if (e.name.endsWith(".yaml")) {
        const text = await Deno.readTextFile(`${dir}${e.name}`);
        out.push({ name: e.name, text });
        // The same experiment as JSON, so the strict JSON reader is fuzzed too.
        const raw = loadExperimentText(text, e.name);
        out.push({ name: e.name.replace(/\.yaml$/, ".json"), text: JSON.stringify(raw, null, 1) });
      }
    }
  };
  await walk(ROOT);
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** Loads, validates and compiles one mutant; returns `valid`, `refused` or throws. */
function loadOne(name: string, text: string): "valid" | "refused" {
  let raw: Record<string, unknown>;
  try {
    raw = loadExperimentText(text, name);
  } catch (error) {
    if (error instanceof ExperimentFileError) {
      assert.ok(error.errors.length > 0 && error.errors.every((e) => e.message !== ""));
      return "refused";
    }
    throw error;
  }
  const result = validateExperiment(raw);
  if (!result.ok) {
    assert.ok(result.errors.length > 0 && result.errors.every((e) => e.message !== ""));
    return "refused";
  }
  for (const exp of result.experiments) {
    try {
      resolvePlan(exp, { runDir: "/tmp/parity-fuzz/run", baseDir: "/tmp", harnessEnv: {} });
    } catch (error) {
      // An unset ${env.X}: the command line reports it as invalid input (exit 2).
      if (error instanceof PlaceholderError) return "refused";
      throw error;
    }
  }
  return "valid";
}

Deno.test("fuzz: mutated experiment files load and validate, or are refused with a message", async () => {
  const files = await seeds();
  assert.ok(files.length >= 4, "example files to mutate");
  const next = seededRandom(SEED); // every run tries the same mutants
  const counts = { valid: 0, refused: 0 };
  const started = performance.now();
  let tried = 0;
  for (; tried < COUNT && performance.now() - started < TIME_BUDGET_MS; tried++) {
    const seed = files[tried % files.length];
    const text = mutate(seed.text, next);
    try {
      counts[loadOne(seed.name, text)]++;
    } catch (error) {
      const file = await Deno.makeTempFile({ prefix: "parity_fuzz_", suffix: `_${seed.name}` });
      await Deno.writeTextFile(file, text);
      throw new Error(
        `mutant ${tried} of ${seed.name} (seed ${SEED}) threw ${(error as Error).stack}\n` +
          `the mutant is saved in ${file}`,
      );
    }
  }
  assert.ok(tried >= Math.min(COUNT, 100), `only ${tried} mutants in the time budget`);
  assert.ok(counts.refused > 0, "some mutants are refused");
});

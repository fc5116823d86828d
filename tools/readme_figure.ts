/**
 * The README's picture of a caught bug: the quickstart with `skip-rng-restore` injected, run by
 * the harness itself, its divergence chart copied to `docs/images/caught-divergence.png` and its
 * root-cause card (the console's FAIL lines) returned, so the README shows what a run really draws
 * and says. `tools/readme_figure_test.ts` runs it again and fails when the committed picture or
 * the README's card no longer match.
 *
 *   npx -y deno@2.9.6 task readme-figure     # redraws docs/images/caught-divergence.png
 *
 * @module
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Where the README's picture lives. */
export const FIGURE: string = join(ROOT, "docs/images/caught-divergence.png");

/** The fault the picture shows, injected into the quickstart. */
export const FAULT = "skip-rng-restore";

/** What one fault run drew and said. */
export interface CaughtDivergence {
  /** The divergence chart, as the run rendered it. */
  png: Uint8Array;
  /** The root-cause card: the console's lines from the first `FAIL [cause-…]` to the verdict line. */
  card: string[];
  /** The harness's exit code (1: FAIL). */
  code: number;
}

/** Runs the quickstart with {@link FAULT} into `resultsDir` and returns its chart and card. */
export async function drawCaughtDivergence(resultsDir: string): Promise<CaughtDivergence> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      join(ROOT, "src/cli/main.ts"),
      "run",
      join(ROOT, "experiments/quickstart.yaml"),
      "--set",
      `trainer.args.fault=${FAULT}`,
      "--results",
      resultsDir,
      "--quiet",
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const lines = stdout.split("\n");
  const from = lines.findIndex((l) => /^FAIL \[cause-/.test(l));
  if (from < 0) {
    throw new Error(
      `the quickstart with ${FAULT} printed no root-cause card (exit ${out.code}):\n${stdout}` +
        new TextDecoder().decode(out.stderr).slice(-2000),
    );
  }
  const card = lines.slice(
    from,
    lines.findIndex((l, i) => i > from && /^FAIL quickstart /.test(l)),
  );
  const png = await Deno.readFile(join(resultsDir, "quickstart/latest/charts/divergence.png"));
  return { png, card, code: out.code };
}

if (import.meta.main) {
  const dir = await Deno.makeTempDir({ prefix: "parity-readme-figure-" });
  try {
    const drawn = await drawCaughtDivergence(dir);
    await Deno.mkdir(dirname(FIGURE), { recursive: true });
    await Deno.writeFile(FIGURE, drawn.png);
    console.log(`readme-figure: wrote ${FIGURE} (${drawn.png.length} bytes); the card:`);
    console.log(drawn.card.join("\n"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

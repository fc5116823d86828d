/**
 * Finds the test-only tools that `tools/setup_tools.sh` (`deno task setup-tools`) installs into
 * `.venv-tools/` with exact pins: GitHub's Markdown renderer (cmark-gfm, through the `cmarkgfm`
 * package) and `actionlint`. Like the Slurm tests, the tests that need them are ignored with a
 * printed reason on a machine without the venv, and fail under CI (`CI=true`), which installs it.
 *
 * @module
 */

import { join } from "node:path";
import { PROJECT } from "./cli_harness.ts";

/** The tools venv. */
export const TOOLS_VENV: string = join(PROJECT, ".venv-tools");

/** Running under CI, where these tests may not be skipped. */
export const IN_CI: boolean = Deno.env.get("CI") === "true";

/** Whether a tool can run, and why not. */
export interface ToolProbe {
  /** The tool answered. */
  ok: boolean;
  /** Why it cannot run (empty when it can). */
  reason: string;
}

async function answers(cmd: string, args: string[]): Promise<ToolProbe> {
  try {
    const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).output();
    if (out.success) return { ok: true, reason: "" };
    return { ok: false, reason: `${cmd} failed: ${new TextDecoder().decode(out.stderr).trim()}` };
  } catch {
    return {
      ok: false,
      reason: `${cmd} is missing; run \`deno task setup-tools\` (tools/setup_tools.sh)`,
    };
  }
}

/** The venv's Python, which imports cmarkgfm. */
export const TOOLS_PYTHON: string = join(TOOLS_VENV, "bin/python");

/** The venv's actionlint binary. */
export const ACTIONLINT: string = join(TOOLS_VENV, "bin/actionlint");

/** Whether cmark-gfm can render. */
export const CMARK_GFM: ToolProbe = await answers(TOOLS_PYTHON, ["-c", "import cmarkgfm"]);

/** Whether actionlint runs. */
export const ACTIONLINT_PROBE: ToolProbe = await answers(ACTIONLINT, ["--version"]);

/** `ignore:` of the cmark-gfm tests: only outside CI, and only without the renderer. */
export const CMARK_GFM_IGNORE: boolean = !CMARK_GFM.ok && !IN_CI;

/** `ignore:` of the actionlint test: only outside CI, and only without actionlint. */
export const ACTIONLINT_IGNORE: boolean = !ACTIONLINT_PROBE.ok && !IN_CI;

/** Fails (under CI) when `probe` says the tool cannot run. */
export function assertTool(probe: ToolProbe): void {
  if (!probe.ok) throw new Error(probe.reason);
}

// cmarkgfm's GitHub preset: the table, strikethrough (single tilde too), autolink, tagfilter and
// tasklist extensions, as github.com renders comments. UNSAFE keeps raw HTML (<details>, <sub>)
// in the output so the test can see it; GitHub's sanitizer runs after the renderer.
const RENDER = `import sys, cmarkgfm
from cmarkgfm.cmark import Options
sys.stdout.write(cmarkgfm.github_flavored_markdown_to_html(
    sys.stdin.read(), options=Options.CMARK_OPT_UNSAFE))`;

/** Renders GitHub-flavoured Markdown to HTML with cmark-gfm, as GitHub renders a comment. */
export async function renderGfm(markdown: string): Promise<string> {
  assertTool(CMARK_GFM);
  const child = new Deno.Command(TOOLS_PYTHON, {
    args: ["-c", RENDER],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(markdown));
  await writer.close();
  const out = await child.output();
  const dec = new TextDecoder();
  if (!out.success) throw new Error(`cmark-gfm failed: ${dec.decode(out.stderr)}`);
  return dec.decode(out.stdout);
}

/**
 * Docs that cannot drift: every repository path the README and docs/ name in backticks exists (a
 * glob matches something), every fault a preset accepts is documented, every `--flag` a README
 * command line passes is an option of that command, and the matrix folder pattern the docs give
 * is the one the results store writes.
 */

import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { PROJECT } from "./_testing/cli_harness.ts";
import { createProgram } from "../src/cli/program.ts";
import { experimentFolderName } from "../src/pipeline/store/run_store.ts";
import { PRESET_NAMES, presetNamed } from "../src/presets/mod.ts";

const DOCS = [
  "README.md",
  "CONTRIBUTING.md",
  ...[...Deno.readDirSync(join(PROJECT, "docs"))].filter((e) => e.name.endsWith(".md"))
    .map((e) => `docs/${e.name}`),
];
const TEXT: Record<string, string> = Object.fromEntries(
  DOCS.map((f) => [f, Deno.readTextFileSync(join(PROJECT, f))]),
);
const ROOTS = /^(?:src|test|tools|experiments|examples|adapters|bench|docs|\.github|\.ci)\//;
// Paths that name what a run or a command writes, not files of the repository.
const WRITTEN = /(?:^|\/)(?:results|\.venv-[\w-]+|node_modules|test_output)\/|<|\.\.\./;

function files(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory && e.name !== "node_modules" && !e.name.startsWith(".venv")) {
      out.push(`${relative(PROJECT, path)}/`, ...files(path));
    } else out.push(relative(PROJECT, path));
  }
  return out;
}

Deno.test("every repository path the docs name exists", () => {
  const all = files(PROJECT).filter((f) => ROOTS.test(f));
  const missing: string[] = [];
  for (const [doc, text] of Object.entries(TEXT)) {
    for (const m of text.matchAll(/`([^`\s]+)`/g)) {
      const path = m[1].replace(/[),.:;]+$/, "").replace(/^\.\//, "");
      if (!ROOTS.test(path) || WRITTEN.test(path)) continue;
      const pattern = new RegExp(
        "^" + path.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*\*?/g, "[^/]*") + "/?$",
      );
      if (!all.some((f) => pattern.test(f))) missing.push(`${doc}: ${path}`);
    }
  }
  assert.deepEqual(missing, []);
});

Deno.test("every fault a preset accepts is documented", () => {
  const docs = Object.values(TEXT).join("\n");
  const undocumented = PRESET_NAMES.flatMap((name) =>
    presetNamed(name)!.faults.filter((f) => !docs.includes(`\`${f}\``)).map((f) => `${name}: ${f}`)
  );
  assert.deepEqual(undocumented, []);
});

Deno.test("every --flag of a README command line is an option of that command", () => {
  const program = createProgram(() => {});
  const unknown: string[] = [];
  const blocks = [...TEXT["README.md"].matchAll(/```(?:sh|bash)\n([\s\S]*?)```/g)].map((m) => m[1]);
  for (const line of blocks.join("\n").replace(/\\\n\s*/g, " ").split("\n")) {
    const m = line.match(/(?:task run-experiment|task parity (\S+)|^parity (\S+))(.*)$/);
    if (!m) continue;
    const name = m[1] ?? m[2] ?? "run";
    const command = program.commands.find((c) => c.name() === name);
    if (!command) continue; // `parity <command>`, `--help` of the program
    const options = new Set(command.options.flatMap((o) => [o.long, o.short]));
    options.add("--help");
    const code = m[3].replace(/#.*$/, "").replace(/'[^']*'|"[^"]*"/g, "");
    for (const flag of code.matchAll(/(?:^|\s)(--[a-z][\w-]*)/g)) {
      if (!options.has(flag[1])) unknown.push(`${name} ${flag[1]}: ${line.trim()}`);
    }
  }
  assert.deepEqual(unknown, []);
});

Deno.test("the docs give the matrix folder pattern the results store writes", () => {
  const folder = experimentFolderName("quickstart[zero_stage=1]");
  assert.equal(folder, "quickstart@zero_stage=1");
  const docs = Object.values(TEXT).join("\n");
  assert.ok(docs.includes("results/name@k=v"), "the pattern is documented");
  assert.doesNotMatch(docs, /results\/name\(k=v/, "not the old name(k=v) form");
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function headingAnchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
}

Deno.test("every link of the README, CONTRIBUTING.md and the hooks README resolves", () => {
  const broken: string[] = [];
  for (const doc of ["README.md", "CONTRIBUTING.md", "hooks/README.md"]) {
    const text = Deno.readTextFileSync(join(PROJECT, doc));
    // Code blocks hold commands and YAML, not links.
    const prose = text.replace(/```[\s\S]*?```/g, "");
    for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1];
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [path, anchor] = target.split("#");
      const file = path === ""
        ? doc
        : join(doc.includes("/") ? doc.slice(0, doc.lastIndexOf("/")) : "", path);
      let body: string;
      try {
        body = Deno.statSync(join(PROJECT, file)).isFile
          ? Deno.readTextFileSync(join(PROJECT, file))
          : "";
      } catch {
        broken.push(`${doc}: ${target} (no such file)`);
        continue;
      }
      if (anchor === undefined) continue;
      const anchors = [...body.matchAll(/^#{1,6} (.+)$/gm)].map((h) => headingAnchor(h[1]));
      if (!anchors.includes(anchor)) broken.push(`${doc}: ${target} (no such heading)`);
    }
  }
  assert.deepEqual(broken, []);
});

/**
 * `.github/workflows/parity-nightly.yml`: linted by a real actionlint (`.venv-tools`, pinned in
 * tools/requirements-tools.txt), and its `run:` steps executed here in order, as a runner would
 * (bash -eo pipefail, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, the step's `env:`), on a pull-request
 * event with a small suite and a stand-in `gh`. Steps that `uses:` an action are not run; what
 * they read (the JUnit file, the uploaded folders) is checked to exist.
 *
 * The steps run in a copy of the checkout (its tracked and untracked, not ignored files, the
 * DeepSpeed venvs linked in), as `actions/checkout` would give them: the workflow's
 * `deno install --frozen` syncs `node_modules` to deno.lock, which in the project itself would
 * remove the test-only packages (deno.test.lock) under the browser tests running beside this one.
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { parse } from "yaml";
import {
  ACTIONLINT,
  ACTIONLINT_IGNORE,
  ACTIONLINT_PROBE,
  assertTool,
} from "./_testing/ci_tools.ts";
import { PROJECT } from "./_testing/cli_harness.ts";
import { parseXml } from "../src/report/_testing.ts";

const WORKFLOW = join(PROJECT, ".github/workflows/parity-nightly.yml");
const IN_CI = Deno.env.get("CI") === "true";

interface Step {
  name?: string;
  id?: string;
  if?: string;
  uses?: string;
  run?: string;
  env?: Record<string, string>;
  with?: Record<string, string>;
}

async function actionlint(file: string) {
  assertTool(ACTIONLINT_PROBE);
  const out = await new Deno.Command(ACTIONLINT, {
    args: ["-no-color", file],
    cwd: PROJECT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, text: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test({
  name: "actionlint finds nothing in the workflows, and does find a planted mistake",
  ignore: ACTIONLINT_IGNORE,
  async fn() {
    for await (const entry of Deno.readDir(join(PROJECT, ".github/workflows"))) {
      const lint = await actionlint(join(PROJECT, ".github/workflows", entry.name));
      assert.equal(lint.code, 0, lint.text);
    }
    // The linter really reads the file: an untrusted value inlined into a script is caught.
    const dir = await Deno.makeTempDir({ prefix: "parity_actionlint_" });
    try {
      const bad = (await Deno.readTextFile(WORKFLOW)).replace(
        'run: exit "$CODE"',
        'run: echo "${{ github.event.pull_request.title }}"',
      );
      await Deno.writeTextFile(join(dir, "bad.yml"), bad);
      const lint = await actionlint(join(dir, "bad.yml"));
      assert.notEqual(lint.code, 0);
      assert.match(lint.text, /github\.event\.pull_request\.title.*untrusted/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** A copy of the checkout in `dir`, as `actions/checkout` gives a runner (venvs linked). */
async function checkoutCopy(dir: string): Promise<void> {
  const listed = await new Deno.Command("git", {
    args: ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    cwd: PROJECT,
    stdout: "piped",
  }).output();
  assert.equal(listed.code, 0, "git ls-files in the project");
  const files = new TextDecoder().decode(listed.stdout).split("\0").filter((f) => f !== "");
  for (const file of files) {
    const from = join(PROJECT, file);
    const info = await Deno.lstat(from).catch(() => null);
    if (!info?.isFile) continue; // deleted in the working tree, or a link git tracks
    await Deno.mkdir(dirname(join(dir, file)), { recursive: true });
    await Deno.copyFile(from, join(dir, file));
  }
  for await (const entry of Deno.readDir(PROJECT)) {
    if (entry.name.startsWith(".venv-")) {
      await Deno.symlink(join(PROJECT, entry.name), join(dir, entry.name));
    }
  }
}

/** Evaluates the `if:` conditions this workflow uses; anything else fails the test. */
function condition(expr: string | undefined, outputs: Record<string, Record<string, string>>) {
  if (expr === undefined) return true;
  return expr.split("&&").map((t) => t.trim()).every((term) => {
    if (term === "always()") return true;
    if (term === "github.event_name == 'pull_request'") return true; // a PR event
    const m = term.match(/^steps\.(\w+)\.outputs\.(\w+) != ''$/);
    if (m) return (outputs[m[1]]?.[m[2]] ?? "") !== "";
    throw new Error(`workflow_test cannot evaluate "${term}": teach it`);
  });
}

/** Resolves the `${{ }}` expressions this workflow puts in `env:`/`with:` values. */
function expand(
  value: string,
  context: {
    env: Record<string, string>;
    outputs: Record<string, Record<string, string>>;
    workspace: string;
  },
) {
  return value.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_, e: string) => {
    const out = e.match(/^steps\.(\w+)\.outputs\.(\w+)$/);
    if (out) return context.outputs[out[1]]?.[out[2]] ?? "";
    const env = e.match(/^env\.(\w+)$/);
    if (env) return context.env[env[1]] ?? "";
    const known: Record<string, string> = {
      "github.token": "test-token",
      "github.repository": "parity/harness",
      "github.event.pull_request.number": "25",
      "github.workspace": context.workspace,
      "vars.PARITY_REPORT_BASE_URL": "",
    };
    if (e in known) return known[e];
    throw new Error(`workflow_test cannot expand \${{ ${e} }}: teach it`);
  });
}

Deno.test("the workflow's run steps work when run the same way locally", async () => {
  const workflow = parse(await Deno.readTextFile(WORKFLOW));
  const steps: Step[] = workflow.jobs.parity.steps;
  const tmp = await Deno.makeTempDir({ prefix: "parity_workflow_" });
  try {
    const workspace = join(tmp, "checkout");
    await checkoutCopy(workspace);
    const bin = join(tmp, "bin");
    await Deno.mkdir(bin);
    await Deno.symlink(join(PROJECT, "test/programs/fake_gh.sh"), join(bin, "gh"));
    const ghLog = join(tmp, "gh.log");
    const summary = join(tmp, "summary.md");
    const outputs: Record<string, Record<string, string>> = {};
    const env: Record<string, string> = {
      ...Object.fromEntries(
        Object.entries(workflow.env as Record<string, string>).map(([k, v]) => [k, String(v)]),
      ),
      // A two-experiment suite: quick, and it still writes a suite index.
      SUITE: `${join(workspace, "examples/python_trainer/experiment.yaml")} ${
        join(workspace, "experiments/quickstart.yaml")
      }`,
      RESULTS: join(tmp, "results"),
      RUNNER_TEMP: tmp,
      GITHUB_STEP_SUMMARY: summary,
      FAKE_GH_LOG: ghLog,
      FAKE_GH_COMMENT_ID: "4242",
      PATH: `${bin}:${Deno.env.get("PATH") ?? ""}`,
    };
    env.DENO_DIR = Deno.env.get("DENO_DIR") ?? ""; // the machine's cache, not the workflow's
    if (env.DENO_DIR === "") delete env.DENO_DIR;
    const ran: string[] = [];
    for (const step of steps) {
      if (!condition(step.if, outputs)) continue;
      if (step.uses) {
        if (step.uses.startsWith("mikepenz/action-junit-report")) {
          const file = expand(step.with!.report_paths, { env, outputs, workspace });
          const junit = parseXml(await Deno.readTextFile(file));
          assert.equal(junit.name, "testsuites", `${file} is JUnit`);
        }
        if (step.uses.startsWith("actions/upload-artifact")) {
          const first = expand(step.with!.path.split("\n")[0], { env, outputs, workspace });
          const suites = [...Deno.readDirSync(join(tmp, "results"))].filter((e) =>
            e.name.startsWith("suite-")
          );
          assert.match(first, /\/suite-\*\/$/);
          assert.equal(suites.length, 1, "the suite folder the artifact uploads");
        }
        continue;
      }
      const name = step.name ?? step.run!;
      if (
        /setup-deepspeed/.test(step.run!) && !IN_CI &&
        !(await Deno.stat(join(workspace, ".venv-deepspeed/.parity-stamp")).catch(() => null))
      ) {
        console.log(
          `workflow step "${name}" not run: no .venv-deepspeed (deno task setup-deepspeed)`,
        );
        continue;
      }
      const outputFile = join(tmp, `output-${ran.length}`);
      await Deno.writeTextFile(outputFile, "");
      const stepEnv = Object.fromEntries(
        Object.entries(step.env ?? {}).map((
          [k, v],
        ) => [k, expand(String(v), { env, outputs, workspace })]),
      );
      const result = await new Deno.Command("bash", {
        args: ["--noprofile", "--norc", "-eo", "pipefail", "-c", step.run!],
        cwd: workspace,
        env: { ...env, ...stepEnv, GITHUB_OUTPUT: outputFile },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const dec = new TextDecoder();
      assert.equal(
        result.code,
        0,
        `step "${name}" failed:\n${dec.decode(result.stdout)}\n${dec.decode(result.stderr)}`,
      );
      if (step.id) {
        outputs[step.id] = Object.fromEntries(
          (await Deno.readTextFile(outputFile)).split("\n").filter((l) => l.includes("="))
            .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
        );
      }
      ran.push(name);
    }
    assert.equal(outputs.suite?.exit_code, "0", "both experiments PASS");
    assert.match(outputs.suite.index, /\/suite-[^/]+\/index\.md$/);
    const index = await Deno.readTextFile(outputs.suite.index);
    assert.equal(await Deno.readTextFile(summary), index, "the job summary is the suite index");
    // The earlier comment (id 4242) is edited in place with the index as its body.
    const calls = (await Deno.readTextFile(ghLog)).trim().split("\n").map((l) => l.split("\t"));
    assert.equal(calls.length, 2, JSON.stringify(calls));
    assert.deepEqual(calls[1].slice(0, 4), [
      "api",
      "--method",
      "PATCH",
      "repos/parity/harness/issues/comments/4242",
    ]);
    assert.deepEqual(calls[1].slice(4), ["-F", `body=@${outputs.suite.index}`]);
    assert.ok(ran.includes("Exit with the suite's verdict"));
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

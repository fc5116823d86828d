/**
 * The CLI as a package: `deno install -g` (README "Install the CLI") gives a working `parity`
 * command, and every entry point deno.json exports passes `deno doc --lint` (JSDoc on every
 * exported symbol, no reference to an unexported type).
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { PROJECT } from "./_testing/cli_harness.ts";

const CONFIG = JSON.parse(Deno.readTextFileSync(join(PROJECT, "deno.json")));

async function run(cmd: string, args: string[], options: Deno.CommandOptions = {}) {
  const out = await new Deno.Command(cmd, {
    args,
    stdout: "piped",
    stderr: "piped",
    ...options,
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("deno install -g installs a parity command that runs from any folder", async () => {
  const root = await Deno.makeTempDir({ prefix: "parity_install_" });
  try {
    // The README's command, with --root so the test leaves ~/.deno alone.
    const install = await run(Deno.execPath(), [
      "install",
      "-g",
      "-A",
      "-n",
      "parity",
      "--root",
      root,
      "--config",
      join(PROJECT, "deno.json"),
      join(PROJECT, "src/cli/main.ts"),
    ], { cwd: PROJECT });
    assert.equal(install.code, 0, install.stderr);
    const bin = join(root, "bin", "parity");
    // The shim calls `deno`: the one running this test, first on PATH.
    const env = { PATH: `${dirname(Deno.execPath())}:${Deno.env.get("PATH") ?? ""}` };
    const version = await run(bin, ["--version"], { env, cwd: root });
    assert.equal(version.code, 0, version.stderr);
    assert.equal(version.stdout.trim(), `parity ${CONFIG.version}`);
    const validate = await run(bin, ["validate", join(PROJECT, "experiments/quickstart.yaml")], {
      env,
      cwd: root,
    });
    assert.equal(validate.code, 0, validate.stderr);
    assert.match(validate.stdout, /^ok .*quickstart\.yaml \(1 experiment: quickstart\)/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("deno.json names the package and every export passes deno doc --lint", async () => {
  assert.equal(CONFIG.name, "@parity/harness");
  assert.match(CONFIG.version, /^\d+\.\d+\.\d+$/);
  const exports = Object.values(CONFIG.exports as Record<string, string>);
  assert.ok(exports.length > 0);
  const lint = await run(Deno.execPath(), ["doc", "--lint", ...exports], {
    cwd: PROJECT,
    env: { NO_COLOR: "1" },
  });
  assert.equal(lint.code, 0, lint.stdout + lint.stderr);
});

Deno.test("deno.lock holds what a run needs; the test-only packages are pinned in deno.test.lock", async () => {
  const lock = async (name: string) =>
    Object.keys(JSON.parse(await Deno.readTextFile(join(PROJECT, name))).specifiers);
  const [run, test] = await Promise.all([lock("deno.lock"), lock("deno.test.lock")]);
  const testOnly = ["npm:playwright-core@1.65.1", "npm:@sparticuz/chromium@153.0.0"];
  for (const spec of testOnly) {
    assert.ok(!run.includes(spec), `${spec} in deno.lock: every first run would download it`);
    assert.ok(test.includes(spec), `${spec} not pinned in deno.test.lock`);
  }
  for (const spec of Object.values(CONFIG.imports as Record<string, string>)) {
    assert.ok(run.includes(spec) && test.includes(spec), `${spec} in both lockfiles`);
  }
  const chromium = await Deno.readTextFile(join(PROJECT, "test/_testing/chromium.ts"));
  for (const spec of testOnly) assert.ok(chromium.includes(`"${spec}"`), spec);
});

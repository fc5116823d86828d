/**
 * Tests that need one of the project's Python environments (`.venv-deepspeed/`, `.venv-hooks/`, a
 * DeepSpeed release's): ignored with a printed reason on a machine without it, failing under
 * `CI=true`, where `.ci/run` builds every one of them first.
 *
 * @module
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";

/** Whether a test file's venvs are there, and what its tests do when they are not. */
export interface VenvGate {
  /** Every venv has its interpreter. */
  available: boolean;
  /** A `Deno.test`'s `ignore`: a venv is missing and this is not CI. */
  ignore: boolean;
  /** Fails the test (under CI) naming the missing venvs and their set-up. */
  assertVenvs(): void;
}

/**
 * The gate of the tests of `what` that need `venvs` (folders), built by `setUp`; prints why they
 * are ignored when they are.
 */
export function venvGate(what: string, venvs: readonly string[], setUp: string): VenvGate {
  const missing = venvs.filter((v) => !existsSync(join(v, "bin/python")));
  const available = missing.length === 0;
  const ignore = !available && Deno.env.get("CI") !== "true";
  if (ignore) console.error(`${what} tests ignored: no ${missing.join(", ")} (${setUp})`);
  return {
    available,
    ignore,
    assertVenvs: () =>
      assert.ok(available, `CI must build ${missing.join(", ")} before the tests (${setUp})`),
  };
}

/**
 * Runs a pytest suite under `python`, DeepSpeed on CPU with its ops from `extensionsDir`, and
 * fails the test unless every test passed and none was skipped; returns pytest's output.
 */
export async function runPytest(
  python: string,
  target: string,
  cwd: string,
  extensionsDir: string,
): Promise<string> {
  const out = await new Deno.Command(python, {
    args: ["-m", "pytest", "-q", "-p", "no:cacheprovider", target],
    cwd,
    env: { DS_ACCELERATOR: "cpu", TORCH_EXTENSIONS_DIR: extensionsDir },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text.slice(-3000));
  assert.match(text, /\d+ passed/);
  assert.doesNotMatch(text, /skipped/, "nothing skipped");
  return text;
}

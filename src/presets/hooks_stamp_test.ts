import assert from "node:assert/strict";
import { join } from "node:path";
import { HOOKS_PACKAGE_DIR, hooksSourceHash, hooksStampProblem } from "./hooks_stamp.ts";
import { PROJECT_DIR } from "./project_dir.ts";

/** What tools/setup_deepspeed.sh stamps (its `hooks_hash`), computed by the shell itself. */
async function shellHash(root: string): Promise<string> {
  const out = await new Deno.Command("bash", {
    args: [
      "-c",
      "find hooks/pyproject.toml hooks/parity_hooks -type f ! -path '*/__pycache__/*' -print0 | " +
      "LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1",
    ],
    cwd: root,
    stdout: "piped",
  }).output();
  assert.equal(out.code, 0);
  return new TextDecoder().decode(out.stdout).trim();
}

Deno.test("hooksSourceHash is the hash the set-up script stamps", async () => {
  assert.equal(HOOKS_PACKAGE_DIR, join(PROJECT_DIR, "hooks/parity_hooks"));
  assert.equal(hooksSourceHash(), await shellHash(PROJECT_DIR));
});

Deno.test("hooksStampProblem: a venv without the package or with an older one says what to run", async () => {
  const root = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(root, "hooks/parity_hooks/__pycache__"), { recursive: true });
    await Deno.writeTextFile(join(root, "hooks/pyproject.toml"), "[project]\n");
    await Deno.writeTextFile(join(root, "hooks/parity_hooks/__init__.py"), "x = 1\n");
    await Deno.writeTextFile(join(root, "hooks/parity_hooks/__pycache__/a.pyc"), "ignored");
    const venv = join(root, "venv");
    await Deno.mkdir(venv);
    assert.match(hooksStampProblem(venv, root)!, /no parity_hooks installed from \.\/hooks: run/);
    await Deno.writeTextFile(join(venv, ".parity-hooks-stamp"), hooksSourceHash(root) + "\n");
    assert.equal(hooksStampProblem(venv, root), undefined);
    assert.equal(hooksSourceHash(root), await shellHash(root));
    await Deno.writeTextFile(join(root, "hooks/parity_hooks/__init__.py"), "x = 2\n");
    assert.match(
      hooksStampProblem(venv, root)!,
      /older parity_hooks than \.\/hooks .*setup-deepspeed/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

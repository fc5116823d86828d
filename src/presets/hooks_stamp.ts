/**
 * The hash of the `parity_hooks` sources (`hooks/pyproject.toml` and `hooks/parity_hooks/`),
 * computed as `tools/setup_deepspeed.sh` writes it into a venv's `.parity-hooks-stamp` when it
 * installs the package: the sha256 of `sha256sum`'s lines over the files in byte order. A venv
 * whose stamp differs runs an older copy of the package than the one the cache key hashes.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_DIR } from "./project_dir.ts";

/** The package's folder, a code input of every phase that imports it. */
export const HOOKS_PACKAGE_DIR: string = join(PROJECT_DIR, "hooks/parity_hooks");

function packageFiles(dir: string, rel: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "__pycache__") continue;
    const path = `${rel}/${entry.name}`;
    if (entry.isDirectory()) out.push(...packageFiles(join(dir, entry.name), path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

function sha256(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/** The hash `tools/setup_deepspeed.sh` stamps for the sources under `root/hooks`. */
export function hooksSourceHash(root: string = PROJECT_DIR): string {
  const files = [
    "hooks/pyproject.toml",
    ...packageFiles(join(root, "hooks/parity_hooks"), "hooks/parity_hooks"),
  ]
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const lines = files.map((f) => `${sha256(readFileSync(join(root, f)))}  ${f}\n`).join("");
  return sha256(lines);
}

const SET_UP = "run its set-up again (`deno task setup-deepspeed`, `deno task setup-hooks`, or " +
  "`bash tools/setup_deepspeed.sh --deepspeed X.Y.Z` for a second DeepSpeed venv)";

/** Why `venv` cannot run the package as it is now, or undefined when its stamp is current. */
export function hooksStampProblem(venv: string, root: string = PROJECT_DIR): string | undefined {
  let stamp = "";
  try {
    stamp = readFileSync(join(venv, ".parity-hooks-stamp"), "utf8").trim();
  } catch {
    return `${venv} has no parity_hooks installed from ./hooks: ${SET_UP}`;
  }
  return stamp === hooksSourceHash(root) ? undefined : `${venv} has an older parity_hooks than ` +
    `./hooks (it changed since the venv was set up): ${SET_UP}`;
}

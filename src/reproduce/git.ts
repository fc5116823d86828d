/**
 * A small argv-only git runner for bisect (never through a shell).
 *
 * @module
 */

/** Output of one git command. */
export interface GitOutput {
  /** Exit code. */
  code: number;
  /** Standard output, trimmed. */
  stdout: string;
  /** Standard error, trimmed. */
  stderr: string;
}

/** Runs `git -C <repo> <args>`. */
export async function git(repo: string, args: string[]): Promise<GitOutput> {
  const out = await new Deno.Command("git", {
    args: ["-C", repo, ...args],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
    // Bisect must never stop for an editor or a pager.
    env: { GIT_TERMINAL_PROMPT: "0", GIT_PAGER: "cat", GIT_EDITOR: "true" },
  }).output();
  const dec = new TextDecoder();
  return {
    code: out.code,
    stdout: dec.decode(out.stdout).trim(),
    stderr: dec.decode(out.stderr).trim(),
  };
}

/** Runs git and returns its stdout; throws with its stderr when it fails. */
export async function gitOk(repo: string, args: string[]): Promise<string> {
  const out = await git(repo, args);
  if (out.code !== 0) {
    throw new Error(`git ${args.join(" ")} failed (${out.code}): ${out.stderr || out.stdout}`);
  }
  return out.stdout;
}

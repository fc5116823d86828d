/**
 * `parity bisect` on a git repository created here: a trainer speaking the contract and ten
 * commits, the sixth of which stops restoring the RNG on resume. Bisect names the sixth commit
 * in about log2(10) runs and leaves the repository as it found it — also when interrupted.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { CLI, fixtureTrainer, PROJECT, runCli, writeExperiment } from "./_testing/cli_harness.ts";

const GIT_ENV = {
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.com",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.com",
};

async function git(repo: string, ...args: string[]): Promise<{ code: number; out: string }> {
  const out = await new Deno.Command("git", {
    args: ["-C", repo, ...args],
    env: GIT_ENV,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, out: new TextDecoder().decode(out.stdout).trim() };
}

/** A repository of ten commits; from `broken` on, the trainer forgets the RNG on resume. */
async function makeRepo(dir: string, broken: number): Promise<{ repo: string; commits: string[] }> {
  const repo = join(dir, "trainer-repo");
  await Deno.mkdir(repo);
  await git(repo, "init", "--quiet", "--initial-branch=main");
  const source = await Deno.readTextFile(fixtureTrainer("rng_trainer.ts"));
  assert.ok(source.includes("rng = state.rng;"));
  const commits: string[] = [];
  for (let k = 1; k <= 10; k++) {
    const code = k >= broken
      ? source.replace("rng = state.rng;", "// (RNG restore dropped)")
      : source;
    await Deno.writeTextFile(join(repo, "train.ts"), code);
    await Deno.writeTextFile(join(repo, "VERSION"), `${k}\n`);
    await git(repo, "add", "-A");
    await git(
      repo,
      "commit",
      "--quiet",
      "-m",
      k === broken ? `commit ${k}: refactor resume` : `commit ${k}`,
    );
    commits.push((await git(repo, "rev-parse", "HEAD")).out);
  }
  return { repo, commits };
}

async function experimentFor(dir: string, repo: string, env: Record<string, string> = {}) {
  return await writeExperiment(dir, "bisect.yaml", {
    name: "bisected",
    schedule: { steps: 6, save_at: 3 },
    trainer: {
      command: [Deno.execPath(), "run", "-A", "--quiet", join(repo, "train.ts")],
      code_inputs: [repo],
      env,
      timeout: 60,
    },
    resume: { native: { from: "native" } },
  });
}

async function assertUntouched(repo: string, head: string) {
  assert.equal((await git(repo, "rev-parse", "--abbrev-ref", "HEAD")).out, "main");
  assert.equal((await git(repo, "rev-parse", "HEAD")).out, head);
  assert.equal((await git(repo, "status", "--porcelain")).out, "");
  assert.notEqual((await git(repo, "bisect", "log")).code, 0, "no bisect in progress");
}

Deno.test("bisect: names the sixth of ten commits in about log2(10) runs", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { repo, commits } = await makeRepo(dir, 6);
    const file = await experimentFor(dir, repo);
    const results = join(dir, "results");
    const run = await runCli([
      "bisect",
      file,
      "--repo",
      repo,
      "--good",
      commits[0],
      "--bad",
      "main",
      "--results",
      results,
      "--quiet",
    ]);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.match(
      run.stdout,
      new RegExp(`^bisect: first bad commit ${commits[5]} commit 6: refactor resume`),
    );
    assert.match(run.stdout, /verdict FAIL/);
    assert.match(run.stdout, /baseline~resume-native \(loss, exact\): FAIL at step 4/);
    const tested = run.stdout.split("tested:\n")[1].trim().split("\n");
    assert.ok(tested.length <= 4, `${tested.length} runs:\n${run.stdout}`);
    const report = /report: (\S+)/.exec(run.stdout)![1];
    assert.ok((await Deno.stat(join(PROJECT, report)).catch(() => Deno.stat(report))).isFile);
    await assertUntouched(repo, commits[9]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bisect: a repository that is not a code input is refused, exit 2", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { repo, commits } = await makeRepo(dir, 6);
    const file = await experimentFor(dir, join(dir, "elsewhere"));
    const run = await runCli([
      "bisect",
      file,
      "--repo",
      repo,
      "--good",
      commits[0],
      "--bad",
      "main",
    ]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /is not a code input of bisected/);
    await assertUntouched(repo, commits[9]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bisect: SIGINT stops the run and git bisect is reset", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { repo, commits } = await makeRepo(dir, 6);
    const file = await experimentFor(dir, repo, { SLEEP_MS: "30000" });
    const results = join(dir, "results");
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--quiet",
        CLI,
        "bisect",
        file,
        "--repo",
        repo,
        "--good",
        commits[0],
        "--bad",
        "main",
        "--results",
        results,
        "--quiet",
      ],
      cwd: PROJECT,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    // Wait until the first phase is running (its folder exists), then interrupt.
    const phase = join(results, "bisected");
    for (let i = 0; i < 200; i++) {
      const runs = await Array.fromAsync(Deno.readDir(phase)).catch(() => []);
      if (runs.some((e) => e.name.match(/^\d{8}T/))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 500));
    child.kill("SIGINT");
    const out = await child.output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 3, stdout + new TextDecoder().decode(out.stderr));
    assert.match(stdout, /bisect: interrupted after 0 runs; git bisect was reset/);
    await assertUntouched(repo, commits[9]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

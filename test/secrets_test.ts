/**
 * Planted secrets appear in no file the harness writes (docs/security.md): by variable name, in
 * an innocently named variable through `${env.X}`, as a URL password, as a known token shape, in
 * a resume's environment and in argv. Only the trainer's own logs may hold them.
 */

import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { denoCommand, runCli, writeExperiment } from "./_testing/cli_harness.ts";

const SECRETS = {
  byName: "planted-by-name-0001",
  throughEnv: "planted-through-env-0002",
  urlPassword: "planted-url-pw-0003",
  tokenShape: `ghp_${"P".repeat(36)}`,
  resumeEnv: "planted-resume-env-0005",
  argv: "planted-argv-0006",
  hfFlag: "planted-hf-flag-0007",
};

async function harnessFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) out.push(...await harnessFiles(path));
    // Trainer logs are the trainer's own output (documented); its checkpoints are its own too.
    else if (e.isFile && !/(stdout|stderr)\.log$/.test(e.name) && !/\/checkpoints?\//.test(path)) {
      out.push(path);
    }
  }
  return out;
}

Deno.test("secrets: no planted secret reaches a file the harness writes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await writeExperiment(dir, "secret.yaml", {
      name: "secrets",
      schedule: { steps: 4, save_at: 2 },
      trainer: {
        command: [
          ...denoCommand("echo_trainer.ts", "secrets-marker"),
          `--api-token=${SECRETS.argv}`,
          `--hf_token=${SECRETS.hfFlag}`,
          "--tokenizer_name=visible-tokenizer-0008",
        ],
        timeout: 120,
        env: {
          HF_TOKEN: SECRETS.byName,
          INNOCENT: "${env.MY_DB_PASSWORD}",
          DB_URL: `postgres://user:${SECRETS.urlPassword}@db:5432/x`,
          NOTE: SECRETS.tokenShape,
          TOKENIZERS_PARALLELISM: "false",
        },
      },
      resume: { native: { from: "native", env: { AWS_SECRET_ACCESS_KEY: SECRETS.resumeEnv } } },
    });
    const results = join(dir, "results");
    const run = await runCli(["run", file, "--results", results, "--quiet"], {
      MY_DB_PASSWORD: SECRETS.throughEnv,
    });
    assert.equal(run.code, 0, run.stderr);
    const files = await harnessFiles(results);
    assert.ok(files.some((f) => f.endsWith("manifest.json")));
    assert.ok(files.some((f) => f.endsWith("experiment.resolved.yaml")));
    assert.ok(files.some((f) => f.endsWith("phase.json")));
    assert.ok(files.some((f) => f.endsWith("report.html")));
    for (const path of files) {
      const text = new TextDecoder().decode(await Deno.readFile(path));
      for (const [kind, secret] of Object.entries(SECRETS)) {
        assert.ok(!text.includes(secret), `${relative(results, path)} holds the ${kind} secret`);
      }
    }
    for (const [kind, secret] of Object.entries(SECRETS)) {
      assert.ok(!(run.stdout + run.stderr).includes(secret), `console shows the ${kind} secret`);
    }
    const manifest = await Deno.readTextFile(
      join(results, "secrets", "latest", "manifest.json"),
    );
    assert.match(manifest, /"HF_TOKEN": "<redacted>"/);
    assert.match(manifest, /postgres:\/\/user:<redacted>@db:5432\/x/);
    // Names that only contain TOKEN inside a longer word are no secrets (issue 34).
    assert.match(manifest, /"TOKENIZERS_PARALLELISM": "false"/);
    assert.match(manifest, /"--tokenizer_name=visible-tokenizer-0008"/);
    const resolved = await Deno.readTextFile(
      join(results, "secrets", "latest", "experiment.resolved.yaml"),
    );
    assert.match(resolved, /TOKENIZERS_PARALLELISM: "?false"?/);
    assert.match(resolved, /--tokenizer_name=visible-tokenizer-0008/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

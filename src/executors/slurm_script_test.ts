import assert from "node:assert/strict";
import { join } from "node:path";
import { batchScript, shellQuote } from "./slurm_script.ts";

const NASTY = [
  "plain",
  "",
  "with space",
  "it's",
  "'",
  "''",
  "$HOME ${PATH} $(id) `id`",
  "back\\slash\\",
  "new\nline",
  "glob * ? [a]",
  "semi; rm -rf / && echo | cat > x",
  "--flag=value",
  "-n",
  "ünïcødé ✓",
  '"double" quotes',
  "tab\there",
];

async function runScript(text: string, dir: string): Promise<{ code: number; stdout: string }> {
  const script = join(dir, "job.sh");
  await Deno.writeTextFile(script, text);
  const out = await new Deno.Command("sh", { args: [script], stdout: "piped", stderr: "piped" })
    .output();
  return { code: out.code, stdout: new TextDecoder().decode(out.stdout) };
}

Deno.test("shellQuote: sh reads every quoted word back exactly", async () => {
  const text = `printf '%s\\0' ${NASTY.map(shellQuote).join(" ")}`;
  const out = await new Deno.Command("sh", { args: ["-c", text], stdout: "piped" }).output();
  const words = new TextDecoder().decode(out.stdout).split("\0").slice(0, -1);
  assert.deepEqual(words, NASTY);
  assert.throws(() => shellQuote("a\0b"), TypeError);
});

Deno.test("batchScript: argv, env and cwd reach the program unchanged; the exit code is kept", async () => {
  const dir = await Deno.makeTempDir({ prefix: "it's $dir " });
  try {
    const exitFile = join(dir, "exit code");
    const program = "console.log(JSON.stringify({args: Deno.args, cwd: Deno.cwd(), " +
      "env: Deno.env.get('ODD')})); Deno.exit(Number(Deno.env.get('CODE')))";
    const text = batchScript({
      phase: "base'line",
      argv: [Deno.execPath(), "eval", program, ...NASTY],
      env: { ODD: NASTY.join("|"), CODE: "7" },
      cwd: dir,
      exitFile,
    });
    const { code, stdout } = await runScript(text, dir);
    assert.equal(code, 7);
    const seen = JSON.parse(stdout);
    assert.deepEqual(seen.args, NASTY);
    assert.equal(seen.env, NASTY.join("|"));
    assert.equal(await Deno.realPath(seen.cwd), await Deno.realPath(dir));
    assert.equal((await Deno.readTextFile(exitFile)).trim(), "7");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("batchScript: srun prefix, bad environment names refused", () => {
  const base = { phase: "p", argv: ["torchrun", "train.py"], env: {}, cwd: "/w", exitFile: "/w/x" };
  assert.match(
    batchScript({ ...base, srun: true }),
    /^srun --kill-on-bad-exit=1 --ntasks-per-node=1 'torchrun' 'train.py'$/m,
  );
  assert.match(batchScript(base), /^'torchrun' 'train.py'$/m);
  assert.throws(() => batchScript({ ...base, env: { "A B": "1" } }), TypeError);
  assert.throws(() => batchScript({ ...base, argv: [] }), TypeError);
});

Deno.test("batchScript: a multi-node srun job exports a rendezvous on its first node", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Stand-ins for Slurm's clients: scontrol expands the node list, srun runs its command once.
    await Deno.writeTextFile(
      join(dir, "scontrol"),
      '#!/bin/sh\n[ "$1 $2 $3" = "show hostnames node[3-4]" ] && printf "node3\\nnode4\\n"\n',
      { mode: 0o755 },
    );
    await Deno.writeTextFile(join(dir, "srun"), '#!/bin/sh\nshift 2\nexec "$@"\n', {
      mode: 0o755,
    });
    const base = {
      phase: "p",
      argv: ["sh", "-c", 'echo "$PET_RDZV_ENDPOINT $PET_RDZV_ID $MASTER_ADDR $MASTER_PORT"'],
      env: { PATH: `${dir}:${Deno.env.get("PATH")}` },
      cwd: dir,
      exitFile: join(dir, "x"),
      srun: true,
    };
    const text = batchScript({ ...base, nodes: 2 });
    const script = join(dir, "job.sh");
    await Deno.writeTextFile(script, text);
    const out = await new Deno.Command("sh", {
      args: [script],
      env: { SLURM_JOB_NODELIST: "node[3-4]", SLURM_JOB_ID: "20042" },
      stdout: "piped",
    }).output();
    assert.equal(
      new TextDecoder().decode(out.stdout).trim(),
      "node3:20042 parity-20042 node3 20042",
    );
    assert.ok(
      !batchScript({ ...base, nodes: 1 }).includes("MASTER_PORT="),
      "one node: no rendezvous",
    );
    assert.ok(!batchScript({ ...base, srun: false, nodes: 2 }).includes("MASTER_PORT="));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

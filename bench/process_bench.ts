/**
 * Supervision overhead of runChild(): spawning a trivial child, and streaming a chatty one.
 * Run: `deno bench -A bench/process_bench.ts`.
 *
 * @module
 */

import { runChild } from "../src/process/mod.ts";

const dir = await Deno.makeTempDir({ prefix: "run_child_bench_" });
const logs = { stdoutPath: `${dir}/stdout.log`, stderrPath: `${dir}/stderr.log` };

Deno.bench(
  "Deno.Command output() of `true` (baseline)",
  { group: "spawn", baseline: true },
  async () => {
    await new Deno.Command("true", { stdout: "piped", stderr: "piped" }).output();
  },
);

Deno.bench("runChild() of `true`", { group: "spawn" }, async () => {
  await runChild({ argv: ["true"], ...logs });
});

Deno.bench("Deno.Command output() of `seq 1 100000` (baseline)", {
  group: "stream",
  baseline: true,
}, async () => {
  await new Deno.Command("seq", { args: ["1", "100000"], stdout: "piped" }).output();
});

Deno.bench("runChild() of `seq 1 100000` with onLine", { group: "stream" }, async () => {
  let lines = 0;
  await runChild({ argv: ["seq", "1", "100000"], ...logs, onLine: () => lines++ });
  if (lines !== 100_000) throw new Error(`saw ${lines} lines`);
});

globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

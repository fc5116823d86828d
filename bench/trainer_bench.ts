/**
 * Reference trainer wall time, Deno start-up included: the quickstart-sized run (4 ranks,
 * 40 steps, grad-accum 2, bf16, ZeRO-2, EP 2 with one replicated expert) as a real subprocess,
 * plus a split-at-20 save, a conversion and a universal reshard resume.
 *
 * Run: `deno bench -A bench/trainer_bench.ts`
 *
 * @module
 */

import { QUICKSTART as REFERENCE_QUICKSTART } from "../test/_testing/reference_trainer.ts";

const CLI = new URL("../reference_trainer/cli.ts", import.meta.url).pathname;
const QUICKSTART = [...REFERENCE_QUICKSTART, "--steps", "40"];
const dir = Deno.makeTempDirSync({ prefix: "trainer_bench_" });
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

async function trainer(args: string[]): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, ...args],
    cwd: dir,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
}

Deno.bench({
  name: "train: quickstart-sized run (4 ranks, 40 steps, GA 2, bf16, ZeRO-2, EP 2), subprocess",
  n: 10,
  warmup: 1,
  // An `async` function: deno bench only awaits functions declared async.
  fn: async () => {
    await trainer(["train", ...QUICKSTART, "--metrics-file", "m.jsonl"]);
  },
});

Deno.bench({
  name: "split at 20 + convert + universal reshard to 2 ranks, 3 subprocesses",
  n: 5,
  warmup: 1,
  fn: async () => {
    await trainer([
      "train",
      ...QUICKSTART,
      "--stop-at",
      "20",
      "--save-at",
      "20",
      "--checkpoint-dir",
      "ck",
      "--metrics-file",
      "s.jsonl",
    ]);
    await trainer(["convert", "--input_folder", "ck/global_step20", "--output_folder", "ck/u"]);
    await trainer([
      "train",
      "--world-size",
      "2",
      "--precision",
      "bf16",
      "--grad-accum",
      "2",
      "--steps",
      "40",
      "--quiet",
      "--resume-from",
      "ck/u",
      "--metrics-file",
      "r.jsonl",
    ]);
  },
});

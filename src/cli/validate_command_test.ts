import { deepEqual, equal } from "node:assert/strict";
import { captureConsole } from "../../test/_testing/capture_console.ts";
import { commandRaw, quickstartRaw } from "../../test/_testing/experiment_files.ts";
import { main } from "./main.ts";

/** Runs `parity validate`, returning the exit code and the printed lines of each stream. */
async function run(args: string[]) {
  const { value: code, out, err } = await captureConsole(() => main(["validate", ...args]));
  const lines = (text: string) => (text === "" ? [] : text.split("\n"));
  return { code, out: lines(out), err: lines(err) };
}

async function withFiles(files: Record<string, string>, body: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir();
  try {
    for (const [name, text] of Object.entries(files)) {
      await Deno.writeTextFile(`${dir}/${name}`, text);
    }
    await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("parity validate prints ok lines with experiment names and exits 0", async () => {
  const matrix = { ...quickstartRaw(), matrix: { "trainer.args.zero_stage": [2, 3] } };
  await withFiles(
    { "a.json": JSON.stringify(matrix), "b.json": JSON.stringify(commandRaw()) },
    async (dir) => {
      const result = await run([`${dir}/a.json`, `${dir}/b.json`]);
      equal(result.code, 0);
      deepEqual(result.out, [
        `ok ${dir}/a.json (2 experiments: quickstart[zero_stage=2], quickstart[zero_stage=3])`,
        `ok ${dir}/b.json (1 experiment: external)`,
      ]);
      deepEqual(result.err, []);
    },
  );
});

Deno.test("parity validate prints every error line and exits 2, checking every file", async () => {
  await withFiles({
    "bad.yaml":
      "name: bad\nschedule: {steps: 10, save_at: 10}\ntrainer: {preset: reference, wolrd_size: 2}\n",
    "good.json": JSON.stringify(commandRaw()),
  }, async (dir) => {
    const result = await run([`${dir}/bad.yaml`, `${dir}/good.json`, `${dir}/missing.yaml`]);
    equal(result.code, 2);
    deepEqual(result.out, [`ok ${dir}/good.json (1 experiment: external)`]);
    deepEqual(result.err, [
      `${dir}/bad.yaml: trainer.wolrd_size: unknown key (did you mean args.world_size?)`,
      `${dir}/bad.yaml: schedule.save_at: expected less than schedule.steps (10), got 10`,
      `${dir}/missing.yaml: file not found`,
    ]);
  });
});

Deno.test("parity validate applies --set in both spellings", async () => {
  await withFiles({ "q.json": JSON.stringify(quickstartRaw()) }, async (dir) => {
    const bad = await run([`${dir}/q.json`, "--set", "trainer.args.fault=nope"]);
    equal(bad.code, 2);
    equal(bad.err.length, 1);
    equal(bad.err[0].startsWith(`${dir}/q.json: trainer.args.fault: unknown fault "nope"`), true);
    const good = await run([
      "--set=schedule.steps=60",
      `${dir}/q.json`,
      "--set",
      "schedule.save_at=30",
    ]);
    equal(good.code, 0);
    const broken = await run([`${dir}/q.json`, "--set", "schedule.steps.x=1"]);
    deepEqual(broken.err, [
      `${dir}/q.json: --set schedule.steps.x=1: schedule.steps is 40, not a mapping`,
    ]);
  });
});

Deno.test("parity validate exits 2 on usage errors", async () => {
  equal((await run([])).code, 2);
  equal((await run(["--set"])).code, 2);
  const unknown = await run(["--frobnicate", "x.yaml"]);
  equal(unknown.code, 2);
  equal(unknown.err[0], "parity validate: unknown option '--frobnicate'");
  const malformed = await run(["a.yaml", "b.yaml", "--set", "steps"]);
  deepEqual(malformed, {
    code: 2,
    out: [],
    err: [
      "parity validate: --set steps: expected KEY.PATH=VALUE",
      "(run 'parity validate --help' for usage)",
    ],
  });
});

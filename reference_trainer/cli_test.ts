import assert from "node:assert/strict";
import {
  join,
  QUICKSTART,
  readMetrics,
  runInProcess,
  runSubprocess,
} from "../test/_testing/reference_trainer.ts";
import { hashBytes } from "./model/hash.ts";

const root = await Deno.makeTempDir({ prefix: "reference_cli_test_" });
Deno.test.afterAll(() => Deno.remove(root, { recursive: true }));

// A small checkpoint to break in different ways.
const ckRoot = join(root, "ck");
{
  const r = await runInProcess([
    "train",
    ...QUICKSTART,
    "--steps",
    "4",
    "--save-at",
    "2",
    "--stop-at",
    "2",
    "--checkpoint-dir",
    ckRoot,
    "--metrics-file",
    join(root, "fixture.jsonl"),
  ]);
  assert.equal(r.code, 0, r.stderr.join("\n"));
}
const tag = join(ckRoot, "global_step2");

function copyTree(from: string, to: string): void {
  Deno.mkdirSync(to, { recursive: true });
  for (const e of Deno.readDirSync(from)) {
    if (e.isDirectory) copyTree(join(from, e.name), join(to, e.name));
    else Deno.copyFileSync(join(from, e.name), join(to, e.name));
  }
}

let cases = 0;
/** A fresh copy of the fixture checkpoint, modified by `edit`. */
function brokenCopy(edit: (dir: string) => void): string {
  const dir = join(root, `broken${cases++}`, "global_step2");
  copyTree(tag, dir);
  edit(dir);
  return dir;
}

const OPTIM0 = "zero_pp_rank_0_mp_rank_00_optim_states.safetensors";

Deno.test("cli: the same train command twice writes byte-identical metrics files", async () => {
  const args = ["train", ...QUICKSTART, "--steps", "40", "--metrics-file", "m.jsonl"];
  const a = join(root, "run-a"), b = join(root, "run-b");
  Deno.mkdirSync(a);
  Deno.mkdirSync(b);
  const [ra, rb] = [await runSubprocess(args, a), await runSubprocess(args, b)];
  assert.equal(ra.code, 0, ra.stderr.join("\n"));
  assert.equal(rb.code, 0);
  const ta = Deno.readFileSync(join(a, "m.jsonl")), tb = Deno.readFileSync(join(b, "m.jsonl"));
  assert.deepEqual(ta, tb);
  const m = readMetrics(join(a, "m.jsonl"));
  assert.equal(m.steps.size, 40);
  assert.ok(m.steps.get(40)!.loss < 0.5 * m.steps.get(1)!.loss);
  assert.equal(ra.stdout.length, 0, "metrics go to the file, not stdout");
});

Deno.test("cli: without --metrics-file the records go to stdout", async () => {
  const r = await runInProcess(["train", "--steps", "2", "--quiet"]);
  assert.equal(r.code, 0);
  assert.equal(r.stdout.length, 3);
  assert.equal(JSON.parse(r.stdout[0]).event, "config");
  assert.equal(JSON.parse(r.stdout[2]).step, 2);
});

const BAD_INPUT: { name: string; argv: () => string[]; code: number; message: RegExp }[] = [
  {
    name: "an unknown flag",
    argv: () => ["train", "--bogus", "1"],
    code: 2,
    message: /unknown flag --bogus/,
  },
  {
    name: "a stray argument",
    argv: () => ["train", "extra"],
    code: 2,
    message: /unexpected argument/,
  },
  { name: "an unknown command", argv: () => ["fly"], code: 2, message: /unknown command "fly"/ },
  {
    name: "a placement that misses an expert",
    argv: () => ["train", "--world-size", "2", "--ep-size", "2", "--placement", "[[0,1],[2]]"],
    code: 2,
    message: /does not cover global expert ids \[3\]/,
  },
  {
    name: "a placement for another EP size",
    argv: () => ["train", "--world-size", "4", "--ep-size", "4", "--placement", "[[0,1],[2,3]]"],
    code: 2,
    message: /ep_size 2, but --ep-size is 4/,
  },
  {
    name: "an EP size that does not divide the world size",
    argv: () => ["train", "--world-size", "3", "--ep-size", "2", "--placement", "[[0,1],[2,3]]"],
    code: 2,
    message: /--ep-size 2 does not divide --world-size 3/,
  },
  {
    name: "a bad precision",
    argv: () => ["train", "--precision", "fp8"],
    code: 2,
    message: /--precision/,
  },
  {
    name: "a bad integer",
    argv: () => ["train", "--steps", "ten"],
    code: 2,
    message: /--steps must be an integer/,
  },
  {
    name: "an accumulation that does not divide the batch",
    argv: () => ["train", "--grad-accum", "3"],
    code: 2,
    message: /--grad-accum 3 does not divide/,
  },
  {
    name: "an unknown fault",
    argv: () => ["train", "--fault", "typo"],
    code: 2,
    message: /--fault typo is unknown/,
  },
  {
    name: "--save-at without a folder",
    argv: () => ["train", "--save-at", "3"],
    code: 2,
    message: /--checkpoint-dir/,
  },
  {
    name: "a resume kind without a loader",
    argv: () => ["train", "--resume-from", tag, "--resume-kind", "sharded"],
    code: 2,
    message: /--resume-kind sharded is not available \(known: native, universal, plan/,
  },
  {
    name: "a missing plan file",
    argv: () => ["train", "--resume-from", tag, "--resume-kind", "plan", "--plan", "nope.json"],
    code: 1,
    message: /plan nope\.json does not exist/,
  },
  {
    name: "a missing checkpoint",
    argv: () => ["train", "--resume-from", join(root, "nope")],
    code: 1,
    message: /does not exist/,
  },
  {
    name: "a checkpoint file with a flipped byte",
    argv: () => [
      "train",
      ...QUICKSTART,
      "--resume-from",
      brokenCopy((d) => {
        const bytes = Deno.readFileSync(join(d, OPTIM0));
        bytes[bytes.length - 3] ^= 0xff;
        Deno.writeFileSync(join(d, OPTIM0), bytes);
      }),
    ],
    code: 1,
    message: /does not match the hash .* \(corrupt\)/,
  },
  {
    name: "a truncated checkpoint file",
    argv: () => [
      "train",
      ...QUICKSTART,
      "--resume-from",
      brokenCopy((d) => Deno.truncateSync(join(d, OPTIM0), 100)),
    ],
    code: 1,
    message: /has 100 bytes, .* records \d+ \(truncated or corrupt\)/,
  },
  {
    name: "a checkpoint file that is not safetensors (marker rewritten to match)",
    argv: () => [
      "train",
      ...QUICKSTART,
      "--resume-from",
      brokenCopy((d) => {
        const junk = new Uint8Array(16).fill(0xff);
        Deno.writeFileSync(join(d, OPTIM0), junk);
        const markerPath = join(d, "checkpoint_complete.json");
        const marker = JSON.parse(Deno.readTextFileSync(markerPath));
        marker.files[OPTIM0] = { bytes: junk.length, hash: hashBytes(junk) };
        Deno.writeTextFileSync(markerPath, JSON.stringify(marker));
      }),
    ],
    code: 1,
    message:
      /zero_pp_rank_0_mp_rank_00_optim_states.safetensors: not a valid safetensors file: header length \d+ runs past the end/,
  },
  {
    name: "a missing checkpoint file",
    argv: () => [
      "train",
      ...QUICKSTART,
      "--resume-from",
      brokenCopy((d) =>
        Deno.removeSync(join(d, "expp_rank_1_mp_rank_00_model_states.safetensors"))
      ),
    ],
    code: 1,
    message: /expp_rank_1_mp_rank_00_model_states.safetensors is missing/,
  },
  {
    name: "a tag folder without its completion marker",
    argv: () => [
      "train",
      ...QUICKSTART,
      "--resume-from",
      brokenCopy((d) => Deno.removeSync(join(d, "checkpoint_complete.json"))),
    ],
    code: 1,
    message: /has no checkpoint_complete.json/,
  },
  {
    name: "a native resume on another topology",
    argv: () => [
      "train",
      "--world-size",
      "2",
      "--ep-size",
      "2",
      "--resume-from",
      tag,
      "--resume-kind",
      "native",
    ],
    code: 1,
    message: /native resume needs the saved topology/,
  },
  {
    name: "a native folder read as universal",
    argv: () => ["train", ...QUICKSTART, "--resume-from", tag, "--resume-kind", "universal"],
    code: 1,
    message: /is a native checkpoint, not universal/,
  },
  {
    name: "a resume at or past --stop-at",
    argv: () => ["train", ...QUICKSTART, "--steps", "4", "--stop-at", "2", "--resume-from", tag],
    code: 2,
    message: /leaves nothing to run/,
  },
  {
    name: "convert without --output_folder",
    argv: () => ["convert", "--input_folder", tag],
    code: 2,
    message: /--output_folder is required/,
  },
  {
    name: "convert of an incomplete folder",
    argv: () => [
      "convert",
      "--input_folder",
      brokenCopy((d) => Deno.removeSync(join(d, "checkpoint_complete.json"))),
      "--output_folder",
      join(root, "never"),
    ],
    code: 1,
    message: /has no checkpoint_complete.json/,
  },
];

for (const c of BAD_INPUT) {
  Deno.test(`cli: ${c.name} exits ${c.code} with one line and writes nothing`, async () => {
    const out = join(root, `bad-${c.name.replaceAll(/\W+/g, "-")}`);
    const argv = c.argv();
    const extra = argv[0] === "train" ? ["--metrics-file", join(out, "m.jsonl")] : [];
    const r = await runInProcess([...argv, ...extra]);
    assert.equal(r.code, c.code, r.stderr.join("\n"));
    assert.equal(r.stderr.length, 1, r.stderr.join("\n"));
    assert.match(r.stderr[0], c.message);
    assert.throws(() => Deno.statSync(out), Deno.errors.NotFound);
    assert.throws(() => Deno.statSync(join(root, "never")), Deno.errors.NotFound);
  });
}

Deno.test("cli: a real process reports bad input on one stderr line and its exit code", async () => {
  const bad = await runSubprocess(["train", "--bogus"], root);
  assert.equal(bad.code, 2);
  assert.deepEqual(bad.stderr, ["trainer train: error: unknown flag --bogus (see --help)"]);
  const corrupt = brokenCopy((d) =>
    Deno.writeTextFileSync(join(d, "checkpoint_complete.json"), "{")
  );
  const r = await runSubprocess(["train", ...QUICKSTART, "--resume-from", corrupt], root, {
    PARITY_METRICS_FILE: join(root, "corrupt", "m.jsonl"),
  });
  assert.equal(r.code, 1);
  assert.equal(r.stderr.length, 1);
  assert.match(r.stderr[0], /checkpoint_complete.json is corrupt/);
  assert.throws(() => Deno.statSync(join(root, "corrupt")), Deno.errors.NotFound);
});

Deno.test("cli: --help prints the flags and exits 0", async () => {
  const r = await runInProcess(["train", "--help"]);
  assert.equal(r.code, 0);
  const text = r.stdout.join("\n");
  for (
    const flag of [
      "--steps",
      "--stop-at",
      "--resume-kind",
      "--placement",
      "--zero-stage",
      "--fault",
    ]
  ) {
    assert.ok(text.includes(flag), flag);
  }
  const c = await runInProcess(["convert", "--help"]);
  assert.match(c.stdout.join("\n"), /--input_folder/);
});

Deno.test("cli: convert ignores train-side faults and writes the same universal files", async () => {
  const clean = join(root, "conv-clean"), faulty = join(root, "conv-faulty");
  assert.equal(
    (await runInProcess(["convert", "--input_folder", tag, "--output_folder", clean])).code,
    0,
  );
  const r = await runInProcess([
    "convert",
    "--input_folder",
    tag,
    "--output_folder",
    faulty,
    "--fault",
    "skip-rng-restore",
  ]);
  assert.equal(r.code, 0);
  const marker = (dir: string) =>
    JSON.parse(Deno.readTextFileSync(join(dir, "universal_complete.json"))).files;
  assert.deepEqual(marker(faulty), marker(clean));
  assert.ok(Object.keys(marker(clean)).includes("zero/head.weight/exp_avg_sq.safetensors"));
});

Deno.test("cli: PARITY_REFERENCE_CRASH_IN_SAVE=1 dies mid-save and leaves a folder that never loads", async () => {
  const dir = join(root, "crash");
  Deno.mkdirSync(dir);
  const save = ["train", ...QUICKSTART, "--steps", "4", "--stop-at", "2", "--save-at", "2"];
  const r = await runSubprocess(
    [...save, "--checkpoint-dir", "ck", "--metrics-file", "m.jsonl"],
    dir,
    {
      PARITY_REFERENCE_CRASH_IN_SAVE: "1",
    },
  );
  assert.equal(r.code, 70);
  const names = [...Deno.readDirSync(join(dir, "ck", "global_step2"))].map((e) => e.name);
  assert.ok(names.length > 0 && !names.includes("checkpoint_complete.json"), names.join());
  assert.throws(() => Deno.statSync(join(dir, "ck", "latest")), Deno.errors.NotFound);
  const resume = await runInProcess([
    "train",
    ...QUICKSTART,
    "--steps",
    "4",
    "--resume-from",
    join(dir, "ck", "global_step2"),
  ]);
  assert.equal(resume.code, 1);
  assert.match(resume.stderr[0], /has no checkpoint_complete.json/);
  // A clean save over the wreck replaces it.
  const again = await runInProcess([
    ...save,
    "--checkpoint-dir",
    join(dir, "ck"),
    "--metrics-file",
    join(dir, "m2.jsonl"),
  ]);
  assert.equal(again.code, 0);
  assert.ok(Deno.statSync(join(dir, "ck", "global_step2", "checkpoint_complete.json")).isFile);
});

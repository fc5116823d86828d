import assert from "node:assert/strict";
import { join } from "node:path";
import { HelpRequested, parseFlags, parsePlacement, TRAIN_FLAGS, trainOptions } from "./args.ts";
import { UsageError } from "./model/trainer_errors.ts";

Deno.test("parsePlacement() reads a descriptor, expert lists or a file", async () => {
  const lists = parsePlacement("[[0,1,3],[2,3]]");
  assert.deepEqual(lists.ranks, [{ rank: 0, experts: [0, 1, 3] }, { rank: 1, experts: [2, 3] }]);
  const descriptor = parsePlacement(JSON.stringify(lists));
  assert.deepEqual(descriptor, lists);
  const dir = await Deno.makeTempDir();
  try {
    const file = join(dir, "placement.json");
    Deno.writeTextFileSync(file, JSON.stringify(lists));
    assert.deepEqual(parsePlacement(file), lists);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
  assert.throws(() => parsePlacement("[[0,1],[2]]"), /does not cover global expert ids \[3\]/);
  assert.throws(() => parsePlacement("[[0,0,1],[2,3]]"), /expert 0 listed twice/);
  assert.throws(() => parsePlacement("/no/such/file.json"), /cannot read file/);
  assert.throws(() => parsePlacement("{oops"), /not valid JSON/);
});

Deno.test("parseFlags() takes PARITY_* defaults, lets flags win and treats empty as unset", () => {
  const v = parseFlags(["--steps=5", "--seed", "3"], TRAIN_FLAGS, {
    PARITY_STEPS: "9",
    PARITY_SEED: "",
    PARITY_STOP_AT: "4",
    PARITY_RESUME_KIND: "",
  });
  assert.equal(v.get("steps"), "5");
  assert.equal(v.get("seed"), "3");
  assert.equal(v.get("stop-at"), "4");
  assert.equal(v.has("resume-kind"), false);
  const o = trainOptions(v);
  assert.equal(o.steps, 5);
  assert.equal(o.stopAt, 4);
  assert.equal(o.topology.epSize, 1);
  const kindOnly = trainOptions(parseFlags([], TRAIN_FLAGS, { PARITY_RESUME_KIND: "native" }));
  assert.equal(kindOnly.resumeKind, null, "a kind without a path is ignored");
});

Deno.test("trainOptions() takes the EP size from the placement and validates ranges", () => {
  const o = trainOptions(
    parseFlags(["--world-size", "4", "--placement", "[[0,1],[2,3]]"], TRAIN_FLAGS, {}),
  );
  assert.equal(o.topology.epSize, 2);
  const bad = (argv: string[], re: RegExp) =>
    assert.throws(
      () => trainOptions(parseFlags(argv, TRAIN_FLAGS, {})),
      (e: Error) => e instanceof UsageError && re.test(e.message),
    );
  bad(["--stop-at", "50"], /--stop-at must be in \[1, 40\]/);
  bad(
    ["--save-at", "5", "--stop-at", "4", "--checkpoint-dir", "x"],
    /--save-at must be in \[1, 4\]/,
  );
  bad(["--ep-size", "3", "--world-size", "3"], /does not divide 4 experts; give --placement/);
  bad(["--zero-stage", "4"], /--zero-stage must be 1, 2 or 3/);
  bad(["--resume-from", "x", "--resume-kind", "plan"], /--resume-kind plan needs --plan/);
  bad(["--quiet=1"], /takes no value/);
  bad(["--steps"], /--steps needs a value/);
});

Deno.test("parseFlags() reports strays, unknown flags and --help the trainer's way", () => {
  const usage = (argv: string[], message: string) =>
    assert.throws(
      () => parseFlags(argv, TRAIN_FLAGS, {}),
      (e: Error) => e instanceof UsageError && e.message === message,
    );
  usage(["--steps", "5", "stray"], 'unexpected argument "stray"');
  usage(["-x"], 'unexpected argument "-x"');
  usage(["--seed=1", "--bogus=2"], "unknown flag --bogus (see --help)");
  assert.throws(() => parseFlags(["--steps", "5", "--help"], TRAIN_FLAGS, {}), HelpRequested);
  assert.throws(() => parseFlags(["-h"], TRAIN_FLAGS, {}), HelpRequested);
  const v = parseFlags(
    ["--quiet", "--steps=7", "--steps", "8", "--metrics-file", ""],
    TRAIN_FLAGS,
    {
      PARITY_METRICS_FILE: "from-env.jsonl",
    },
  );
  assert.equal(v.get("quiet"), "true");
  assert.equal(v.get("steps"), "8", "the last occurrence wins");
  assert.equal(v.get("metrics-file"), "", "a flag given empty still beats the environment");
});

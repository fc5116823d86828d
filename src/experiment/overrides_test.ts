import { deepEqual, throws } from "node:assert/strict";
import { UsageError } from "./validation_errors.ts";
import { applySets, parseKeyPath, parseSetArgument } from "./overrides.ts";
import { ExperimentObjectSchema } from "./schema.ts";

const apply = (raw: Record<string, unknown>, ...sets: string[]) =>
  applySets(raw, sets.map((set) => parseSetArgument(set)));

Deno.test("parseSetArgument() parses values as YAML scalars and flow collections", () => {
  deepEqual(parseSetArgument("schedule.steps=60").value, 60);
  deepEqual(parseSetArgument("trainer.args.fault=skip-rng-restore").value, "skip-rng-restore");
  deepEqual(parseSetArgument("x=true").value, true);
  deepEqual(parseSetArgument("x=1e-4").value, 1e-4);
  deepEqual(parseSetArgument('x="60"').value, "60");
  deepEqual(parseSetArgument("x=a=b").value, "a=b");
  deepEqual(
    parseSetArgument(
      "trainer.args.placement={version: 1, num_experts: 2, ranks: [{rank: 0, experts: [0, 1]}]}",
    )
      .value,
    { version: 1, num_experts: 2, ranks: [{ rank: 0, experts: [0, 1] }] },
  );
  deepEqual(parseSetArgument("metrics=[loss, lr]").value, ["loss", "lr"]);
  // A block collection is not meant as one: the text is taken literally.
  deepEqual(parseSetArgument("description=note: keep").value, "note: keep");
  deepEqual(parseSetArgument("x=").value, undefined);
  deepEqual(parseSetArgument("x=null").value, undefined);
});

Deno.test("parseKeyPath() splits dots and list indices; matrix keys stay whole", () => {
  deepEqual(parseKeyPath("resume.reshard.args.world_size"), [
    "resume",
    "reshard",
    "args",
    "world_size",
  ]);
  deepEqual(parseKeyPath("trainer.command[2]"), ["trainer", "command", 2]);
  deepEqual(parseKeyPath("compare[0].window.to"), ["compare", 0, "window", "to"]);
  deepEqual(parseKeyPath("matrix.trainer.args.zero_stage"), ["matrix", "trainer.args.zero_stage"]);
  deepEqual(parseKeyPath("$schema"), ["$schema"]);
});

Deno.test("parseSetArgument() names the --set in usage errors", () => {
  for (
    const [text, pattern] of [
      ["schedule.steps", /--set schedule\.steps: expected KEY\.PATH=VALUE/],
      ["=3", /--set =3: empty key path/],
      ["a..b=3", /--set a\.\.b=3: malformed key path/],
      ["a[x]=3", /malformed key path/],
      ["x={a: 1", /--set x=\{a: 1: the value is not a valid YAML scalar or flow/],
    ] as const
  ) {
    throws(
      () => parseSetArgument(text),
      (e: Error) => e instanceof UsageError && pattern.test(e.message),
    );
  }
});

Deno.test("applySets() sets deep paths, creating mappings, without touching the input", () => {
  const raw = { name: "q", schedule: { steps: 40, save_at: 20 }, trainer: { preset: "reference" } };
  const out = apply(
    raw,
    "schedule.steps=60",
    "trainer.args.fault=skip-rng-restore",
    "resume.r.args.world_size=2",
  );
  deepEqual(out, {
    name: "q",
    schedule: { steps: 60, save_at: 20 },
    trainer: { preset: "reference", args: { fault: "skip-rng-restore" } },
    resume: { r: { args: { world_size: 2 } } },
  });
  deepEqual(raw.schedule, { steps: 40, save_at: 20 });
});

Deno.test("applySets() replaces list items, appends, and removes with null", () => {
  const raw = { trainer: { command: ["python", "a.py"], args: { fault: "x" } } };
  deepEqual(apply(raw, "trainer.command[1]=b.py").trainer, {
    command: ["python", "b.py"],
    args: { fault: "x" },
  });
  deepEqual(apply(raw, "trainer.command[2]=--fast").trainer, {
    command: ["python", "a.py", "--fast"],
    args: { fault: "x" },
  });
  deepEqual(apply(raw, "trainer.args.fault=null").trainer, {
    command: ["python", "a.py"],
    args: {},
  });
  deepEqual(apply(raw, "trainer.args.fault=").trainer, { command: ["python", "a.py"], args: {} });
});

Deno.test("applySets() refuses paths through values that are not mappings", () => {
  const raw = { schedule: { steps: 40 }, trainer: { command: ["python"] } };
  for (
    const [set, pattern] of [
      ["schedule.steps.x=1", /--set schedule\.steps\.x=1: schedule\.steps is 40, not a mapping/],
      ["trainer.command.x=1", /trainer\.command is a list; use trainer\.command\[index\]/],
      ["trainer.command[5]=x", /trainer\.command has 1 items; index 5 is out of range/],
      ["schedule[0]=1", /schedule is a mapping, not a list/],
    ] as const
  ) {
    throws(() => apply(raw, set), (e: Error) => e instanceof UsageError && pattern.test(e.message));
  }
});

Deno.test("parseSetArgument() with the schema coerces by the target field's type", () => {
  const set = (text: string) => parseSetArgument(text, ExperimentObjectSchema).value;
  // A string field keeps the text as given: no "expected a string" for false, no 0185 → 185.
  deepEqual(set("trainer.env.TOKENIZERS_PARALLELISM=false"), "false");
  deepEqual(set("trainer.env.OMP_NUM_THREADS=1"), "1");
  deepEqual(set("resume.native.env.X=0185"), "0185");
  deepEqual(set("trainer.args.fault=0185"), "0185");
  deepEqual(set("description=[WIP] a: b"), "[WIP] a: b");
  deepEqual(set("trainer.command[2]=--lr=1e-3"), "--lr=1e-3");
  deepEqual(set('trainer.env.X="quoted"'), "quoted", "a quoted YAML string is unquoted");
  deepEqual(set("trainer.env.X=null"), undefined, "null still removes");
  deepEqual(set("trainer.env.X="), undefined);
  // A free-form args key: YAML's number or boolean only when it writes back as typed.
  deepEqual(set("trainer.args.ds=0185"), "0185");
  deepEqual(set("trainer.args.lr=1e-3"), "1e-3");
  deepEqual(set("trainer.args.scale=1.0"), "1.0");
  deepEqual(set("trainer.args.flag=True"), "True");
  deepEqual(set("trainer.args.n=2"), 2);
  deepEqual(set("trainer.args.on=false"), false);
  deepEqual(set("resume.x.args.name=gpt2"), "gpt2");
  deepEqual(set("trainer.args.x=null"), undefined);
  // A typed field keeps YAML's parsing, so the schema judges it as before.
  deepEqual(set("schedule.steps=60"), 60);
  deepEqual(set("trainer.args.world_size=04"), 4);
  deepEqual(set("tolerance.rtol=1e-4"), 1e-4);
  deepEqual(set("trainer.env={A: 1}"), { A: 1 });
  deepEqual(set("matrix.trainer.args.ds=[01, 2]"), [1, 2], "matrix values stay YAML");
  deepEqual(set("nosuchkey=0185"), 185, "an unknown path is YAML (the schema refuses it)");
});

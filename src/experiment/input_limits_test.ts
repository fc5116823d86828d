import assert from "node:assert/strict";
import { join } from "node:path";
import { bracketDepth, valueDepth } from "./input_limits.ts";
import { readExperimentFile } from "./validate_experiment.ts";

const HEAD = "name: limits\nschedule: { steps: 4, save_at: 2 }\ntrainer: { command: [echo] }\n";

function aliasBomb(): string {
  let text = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n';
  for (let i = 1, prev = "a"; i < 10; i++) {
    const name = String.fromCharCode(97 + i);
    text += `${name}: &${name} [${Array(9).fill(`*${prev}`).join(",")}]\n`;
    prev = name;
  }
  return text;
}

/** Each hostile file: its name, its text (or a path to use as is) and words of the message. */
const CASES: { name: string; text?: string; path?: string; message: RegExp }[] = [
  { name: "bomb.yaml", text: HEAD + aliasBomb(), message: /aliases expand too much/ },
  {
    name: "deep.json",
    text: `{"name": "x", "d": ${"[".repeat(3000)}${"]".repeat(3000)}}`,
    message: /nest deeper than 64 levels/,
  },
  {
    name: "deep.yaml",
    text: `${HEAD}d: ${"[".repeat(3000)}${"]".repeat(3000)}\n`,
    message: /nest deeper/,
  },
  {
    name: "block.yaml",
    text: HEAD + Array.from({ length: 300 }, (_, i) => `${" ".repeat(i)}k${i}:\n`).join(""),
    message: /nest deeper/,
  },
  {
    name: "big.yaml",
    text: HEAD + `description: "${"x".repeat(2 << 20)}"\n`,
    message: /bytes; at most 1048576/,
  },
  {
    name: "resumes.yaml",
    text: HEAD + "resume:\n" +
      Array.from({ length: 10_000 }, (_, i) => `  r${i}: { from: native }\n`).join(""),
    message: /10000 resumes; at most 64/,
  },
  {
    name: "matrix.yaml",
    text: HEAD + "matrix:\n" +
      Array.from(
        { length: 12 },
        (_, i) => `  trainer.env.V${i}: [${[..."0123456789"].map((d) => `"${d}"`)}]\n`,
      )
        .join(""),
    message: /1000000000000 combinations; at most 1024/,
  },
  { name: "zero", path: "/dev/zero", message: /not a regular file/ },
  { name: "folder", path: "/", message: /is a folder/ },
];

Deno.test("hostile experiment files are refused quickly with a message, never a crash", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const fifo = join(dir, "fifo.yaml");
    new Deno.Command("mkfifo", { args: [fifo] }).outputSync();
    for (const c of [...CASES, { name: "fifo", path: fifo, message: /not a regular file/ }]) {
      const path = c.path ?? join(dir, c.name);
      if (c.text !== undefined) await Deno.writeTextFile(path, c.text);
      const t0 = performance.now();
      const result = await readExperimentFile(path);
      const ms = performance.now() - t0;
      assert.equal(result.ok, false, c.name);
      if (!result.ok) {
        const text = result.errors.map((e) => `${e.path}: ${e.message}`).join("\n");
        assert.match(text, c.message, c.name);
      }
      assert.ok(ms < 3000, `${c.name} took ${Math.round(ms)} ms`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bracketDepth and valueDepth stop early and ignore quoted brackets", () => {
  assert.equal(bracketDepth('{"a": "[[[[", "b": [1, [2]]}'), 3);
  assert.equal(bracketDepth("x: '[not' \ny: [1]"), 1);
  assert.equal(bracketDepth("[".repeat(10_000), 64), 65);
  assert.equal(valueDepth({ a: [1, { b: 2 }] }), 3);
  assert.equal(valueDepth(1), 0);
});

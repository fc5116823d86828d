import { deepEqual, equal, match, throws } from "node:assert/strict";
import { ExperimentFileError } from "./validation_errors.ts";
import { loadExperimentFile, loadExperimentText } from "./load.ts";

function errorsOf(text: string, name: string): string[] {
  try {
    loadExperimentText(text, name);
  } catch (error) {
    if (error instanceof ExperimentFileError) {
      return error.errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message));
    }
    throw error;
  }
  throw new Error("expected an ExperimentFileError");
}

Deno.test("loadExperimentText() parses YAML with anchors and merge keys", () => {
  const raw = loadExperimentText(
    "name: q\nbase: &b {world_size: 4}\ntrainer:\n  args:\n    <<: *b\n    ep_size: 2\n",
    "q.yaml",
  );
  deepEqual(raw, {
    name: "q",
    base: { world_size: 4 },
    trainer: { args: { world_size: 4, ep_size: 2 } },
  });
});

Deno.test("loadExperimentText() gives YAML syntax errors a line and column", () => {
  const [first] = errorsOf("name: q\nschedule: [1, 2\ntrainer: x\n", "q.yaml");
  match(first, /^YAML syntax error at line 3, column 1: /);
});

Deno.test("loadExperimentText() names duplicate YAML keys by path, even inside lists", () => {
  deepEqual(
    errorsOf("resume:\n  a: {from: native}\n  a: {from: universal}\n", "x.yml"),
    ["resume.a: duplicate key (line 3, column 3; first at line 2, column 3)"],
  );
  deepEqual(
    errorsOf("compare:\n  - {a: baseline, a: split}\n", "x.yaml"),
    ["compare[0].a: duplicate key (line 2, column 19; first at line 2, column 6)"],
  );
});

Deno.test("loadExperimentText() reads .json strictly, with positions", () => {
  match(
    errorsOf('{"a": 1,\n  "b": }', "x.json")[0],
    /^JSON syntax error at line 2, column 8: Unresolved plain scalar/,
  );
  match(
    errorsOf('{"a": 1,}', "x.json")[0],
    /line 1, column 9: Expected double-quoted property name/,
  );
  match(errorsOf("{\n  // no\n}", "x.JSON")[0], /line 2, column 3/);
  match(errorsOf('{"a": 1} x', "x.json")[0], /line 1, column 10: Unexpected scalar/);
  match(errorsOf('{"a": "x', "x.json")[0], /Missing closing "quote/);
  deepEqual(errorsOf('{"a": {"b": 1, "b": 2}}', "x.json"), [
    "a.b: duplicate key (line 1, column 16; first at line 1, column 8)",
  ]);
});

Deno.test("loadExperimentText() agrees with JSON.parse on valid JSON", () => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const value = (depth: number): unknown => {
    const pick = Math.floor(random() * (depth > 3 ? 4 : 6));
    if (pick === 0) return Math.round((random() - 0.5) * 1e6) / 1e3;
    if (pick === 1) return `s\u00e9\n"${random()}\\`;
    if (pick === 2) return random() < 0.5;
    if (pick === 3) return null;
    if (pick === 4) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
    return Object.fromEntries(
      Array.from({ length: Math.floor(random() * 4) }, (_, i) => [`k${i}`, value(depth + 1)]),
    );
  };
  for (let i = 0; i < 200; i++) {
    const document = { root: value(0), n: -1.5e-7 };
    const text = JSON.stringify(document, null, i % 2 === 0 ? 2 : undefined);
    deepEqual(loadExperimentText(text, "v.json"), JSON.parse(text));
  }
});

Deno.test("loadExperimentText() rejects empty files and non-mapping top levels", () => {
  deepEqual(errorsOf("", "x.yaml"), ["the file is empty"]);
  deepEqual(errorsOf("# only a comment\n", "x.yaml"), ["the file is empty"]);
  deepEqual(errorsOf("  ", "x.json"), ["the file is empty"]);
  match(errorsOf("- a\n- b\n", "x.yaml")[0], /expected a mapping at the top level.*got a list/);
  match(errorsOf("[1]", "x.json")[0], /got a list/);
  match(errorsOf("hello\n", "x.yaml")[0], /got string "hello"/);
});

Deno.test("loadExperimentFile() reads a file and reports a missing one", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/a.yaml`, "name: a\n");
    deepEqual(await loadExperimentFile(`${dir}/a.yaml`), { name: "a" });
    const missing = `${dir}/missing.yaml`;
    await loadExperimentFile(missing).then(
      () => {
        throw new Error("expected a rejection");
      },
      (error: ExperimentFileError) => {
        equal(error.source, missing);
        deepEqual(error.errors, [{ path: "", message: "file not found" }]);
        equal(error.message, `${missing}: file not found`);
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ExperimentFileError carries every problem", () => {
  throws(
    () => loadExperimentText("a: 1\na: 2\nb: 1\nb: 2\n", "two.yaml"),
    (error: ExperimentFileError) =>
      error.errors.length === 2 && /two\.yaml: a: duplicate key/.test(error.message),
  );
});

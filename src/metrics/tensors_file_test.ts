import assert from "node:assert/strict";
import { join } from "node:path";
import { readJsonl } from "./jsonl.ts";
import { READER_CODES } from "./series.ts";
import { TENSORS_ERROR_FIELD } from "./tensors_file.ts";
import { jsonl, withTempDir } from "../../test/_testing/metrics_fixtures.ts";

const TENSORS = {
  "layers.0.experts.w2 · expert 1 · exp_avg": "0123456789abcdef",
  "layers.0.attn.weight · params": "fedcba9876543210",
};

/** Writes `metrics.jsonl` (a step and one `saved` event naming `file`) and reads it back. */
async function readWith(dir: string, file: unknown, sidecar?: [string, string]) {
  if (sidecar) await Deno.writeTextFile(join(dir, sidecar[0]), sidecar[1]);
  const path = join(dir, "metrics.jsonl");
  await Deno.writeTextFile(
    path,
    jsonl([{ step: 1, loss: 1 }, {
      event: "saved",
      step: 1,
      digests: { params: "a" },
      tensors_file: file,
    }]),
  );
  return await readJsonl(path);
}

Deno.test("readJsonl() reads an event's tensors_file into its tensors, once", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(join(dir, "sub"));
    const series = await readWith(dir, "sub/tensors-saved-1.json", [
      "sub/tensors-saved-1.json",
      JSON.stringify(TENSORS),
    ]);
    assert.deepEqual(series.events[0].fields.tensors, TENSORS);
    assert.equal(series.events[0].fields[TENSORS_ERROR_FIELD], undefined);
    assert.deepEqual(series.diagnostics, []);
  });
});

Deno.test("readJsonl() keeps an inline tensors map and ignores tensors_file beside it", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "metrics.jsonl");
    await Deno.writeTextFile(
      path,
      jsonl([{ step: 1, loss: 1 }, {
        event: "saved",
        step: 1,
        digests: { p: "a" },
        tensors: TENSORS,
        tensors_file: "x",
      }]),
    );
    const series = await readJsonl(path);
    assert.deepEqual(series.events[0].fields.tensors, TENSORS);
    assert.deepEqual(series.diagnostics, []);
  });
});

const BAD: [string, unknown, [string, string] | undefined, RegExp][] = [
  ["a path leaving the folder", "../tensors.json", undefined, /leaves the metrics file's folder/],
  ["a nested .. segment", "sub/../../t.json", undefined, /leaves the metrics file's folder/],
  ["an absolute path", "/etc/passwd", undefined, /is absolute/],
  ["a Windows drive path", "C:\\t.json", undefined, /is absolute/],
  ["a non-string name", 7, undefined, /non-empty relative path, got 7/],
  ["a missing file", "tensors-saved-1.json", undefined, /does not exist/],
  ["a file that is not JSON", "t.json", ["t.json", "{not json"], /is not JSON/],
  ["an array", "t.json", ["t.json", "[1, 2]"], /not a JSON object of tensor digests/],
  ["a digest that is not a string", "t.json", ["t.json", '{"w · params": 1}'], /not a string/],
  ["an empty map", "t.json", ["t.json", "{}"], /holds no tensor digests/],
];

for (const [what, file, sidecar, message] of BAD) {
  Deno.test(`readJsonl() diagnoses ${what} as tensors_file, never throws`, async () => {
    await withTempDir(async (dir) => {
      const series = await readWith(dir, file, sidecar);
      const event = series.events[0];
      assert.equal(event.fields.tensors, undefined);
      assert.match(String(event.fields[TENSORS_ERROR_FIELD]), message);
      assert.deepEqual(series.diagnostics.map((d) => [d.code, d.level]), [
        [READER_CODES.tensorsFile, "warning"],
      ]);
      assert.match(
        series.diagnostics[0].message,
        /per-tensor digests of the saved event \(line 2\)/,
      );
      assert.equal(series.values.loss[0], 1, "the steps are read as ever");
    });
  });
}

Deno.test("readJsonl() diagnoses a tensors_file that is a folder", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(join(dir, "t.json"));
    const series = await readWith(dir, "t.json");
    assert.match(String(series.events[0].fields[TENSORS_ERROR_FIELD]), /is not a file/);
  });
});

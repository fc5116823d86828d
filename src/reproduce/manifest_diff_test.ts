import assert from "node:assert/strict";
import type { Manifest } from "../pipeline/store/manifest.ts";
import { diffManifests } from "./manifest_diff.ts";

function manifest(runDir: string, over: Partial<Manifest> = {}): Manifest {
  return {
    harness_version: "0.1.0",
    git: { commit: "aaa", dirty: false },
    deno: "2.9.6",
    os: "linux x86_64",
    harness_argv: [],
    experiment_file: null,
    input_hashes: {},
    children: [{
      phase: "baseline",
      argv: ["python", "train.py", `${runDir}/phases/baseline/metrics.jsonl`],
      env: { PARITY_RUN_DIR: `${runDir}/phases/baseline`, HF_TOKEN: "<redacted>" },
      cwd: runDir,
    }],
    ...over,
  };
}

Deno.test("diffManifests: run-folder paths are abstracted; real differences are named", () => {
  assert.deepEqual(
    diffManifests({ manifest: manifest("/r/1"), runDir: "/r/1" }, {
      manifest: manifest("/r/2"),
      runDir: "/r/2",
    }),
    [],
  );
  const changed = manifest("/r/2", { git: { commit: "bbb", dirty: true }, deno: "2.9.7" });
  changed.children[0].env.OMP_NUM_THREADS = "4";
  const diff = diffManifests({ manifest: manifest("/r/1"), runDir: "/r/1" }, {
    manifest: changed,
    runDir: "/r/2",
  });
  assert.deepEqual(diff.map((d) => [d.field, d.stored, d.rerun]), [
    ["children.baseline.env.OMP_NUM_THREADS", "(not recorded)", "4"],
    ["deno", "2.9.6", "2.9.7"],
    ["git.commit", "aaa", "bbb"],
    ["git.dirty", "false", "true"],
  ]);
  // A phase the stored run took from the cache has no child to compare with.
  const cached = manifest("/r/1", { children: [] });
  assert.deepEqual(
    diffManifests({ manifest: cached, runDir: "/r/1" }, {
      manifest: manifest("/r/2"),
      runDir: "/r/2",
    }),
    [],
  );
});

import assert from "node:assert/strict";
import { parseJsonl } from "../../metrics/mod.ts";
import { type EnvironmentFacts, environmentKey } from "../store/environment.ts";
import {
  flatEnvironment,
  type GoldenHeader,
  goldenPath,
  goldenText,
  judgeGolden,
  readGolden,
  writeGolden,
} from "./golden.ts";

const FACTS: EnvironmentFacts = {
  cpu_model: "CPU A",
  cpu_count: 2,
  hardware_class: "cpu-x86_64",
  frameworks: { deno: "2.9.6" },
  variables: {},
  code: { trainer: { inputs: ["t.ts"], digest: "ab".repeat(32), git: {} } },
};

const series = (scale: number) =>
  parseJsonl(
    [1, 2, 3].map((step) => JSON.stringify({ step, loss: (0.1 + step / 3) * scale })).join("\n"),
  );

async function withGolden(
  noise: GoldenHeader["noise_floor"],
  fn: (dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    const key = await environmentKey(FACTS);
    const header: GoldenHeader = {
      event: "golden",
      golden_version: 1,
      experiment: "x",
      environment_key: key,
      environment: flatEnvironment(FACTS, "linux x86_64"),
      source_run: "/r",
      saved_at: "2026-01-01T00:00:00Z",
      metrics: ["loss"],
      noise_floor: noise,
    };
    await writeGolden(goldenPath(dir, "x", key), goldenText(header, series(1)));
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const input = (dir: string, facts: EnvironmentFacts, scale: number) => ({
  experiment: "x",
  goldensDir: dir,
  facts,
  os: "linux x86_64",
  baseline: series(scale),
  metrics: ["loss"],
  steps: 3,
});

Deno.test("golden file round-trips every value bit for bit", async () => {
  await withGolden(null, async (dir) => {
    const golden = await readGolden(goldenPath(dir, "x", await environmentKey(FACTS)));
    assert.deepEqual([...golden!.series.values.loss], [...series(1).values.loss]);
    assert.equal(golden!.header.environment.cpu_model, "CPU A");
  });
});

Deno.test("golden: same facts exact; other CPU uses the declared tolerance or the noise floor", async () => {
  await withGolden(null, async (dir) => {
    const same = await judgeGolden(input(dir, FACTS, 1));
    assert.equal(same.summary.verdict, "PASS");
    assert.equal(same.summary.lane, "exact");

    const otherCpu = { ...FACTS, cpu_model: "CPU B" };
    const exactOnly = await judgeGolden(input(dir, otherCpu, 1 + 1e-9));
    assert.equal(exactOnly.summary.lane, "exact");
    assert.equal(exactOnly.summary.verdict, "FAIL");
    assert.deepEqual(exactOnly.summary.differences, ["cpu_model: CPU A → CPU B"]);

    const tolerated = await judgeGolden({
      ...input(dir, otherCpu, 1 + 1e-9),
      tolerance: { rtol: 1e-6, atol: 0, max_failures: 0 },
    });
    assert.equal(tolerated.summary.lane, "tolerance");
    assert.equal(tolerated.summary.verdict, "PASS");
    assert.match(tolerated.summary.reason, /declared tolerance/);
  });
  const noise = { repeats: 2, identical: false, max_rel_deviation: 1e-7 };
  await withGolden(noise, async (dir) => {
    const judged = await judgeGolden(input(dir, { ...FACTS, cpu_model: "CPU B" }, 1 + 1e-8));
    assert.equal(judged.summary.lane, "tolerance");
    assert.equal(judged.summary.verdict, "PASS");
    assert.match(judged.summary.reason, /noise floor/);
  });
});

Deno.test("golden: another trainer code digest is another key, so ABSTAIN", async () => {
  await withGolden(null, async (dir) => {
    const facts = {
      ...FACTS,
      code: { trainer: { inputs: ["t.ts"], digest: "cd".repeat(32), git: {} } },
    };
    const judged = await judgeGolden(input(dir, facts, 1));
    assert.equal(judged.summary.verdict, "ABSTAIN");
    assert.equal(judged.comparisons[0].verdict, "ABSTAIN");
    assert.equal(judged.diagnostics[0].code, "golden-missing");
  });
});

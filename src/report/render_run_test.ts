import assert from "node:assert/strict";
import { captureConsole } from "../../test/_testing/capture_console.ts";
import { makeFixtureRun } from "../../test/_testing/run_fixture.ts";
import { renderRun, resolveRunDir } from "./render_run.ts";
import { main } from "../cli/main.ts";
import { decodePng } from "../../test/_testing/decode_png.ts";

async function withTemp(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "parity_render_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("renderRun() writes every output and an SVG+PNG+spec for every chart", async () => {
  await withTemp(async (tmp) => {
    const { runDir } = await makeFixtureRun(tmp, { verdict: "FAIL", noisyRepeats: true });
    await renderRun(runDir);
    for (const file of ["report.md", "report.html", "junit.xml"]) {
      assert.ok((await Deno.stat(`${runDir}/${file}`)).size > 500, file);
    }
    const names = [
      "divergence",
      "loss",
      "diff-baseline_resume-native",
      "diff-baseline_resume-universal",
      "diff-baseline_resume-native_grad_norm",
      "plan-load",
    ];
    const files = [];
    for await (const e of Deno.readDir(`${runDir}/charts`)) files.push(e.name);
    assert.deepEqual(
      files.sort(),
      names.flatMap((n) => [`${n}.png`, `${n}.svg`, `${n}.vl.json`]).sort(),
    );
    for (const name of names) {
      const png = decodePng(await Deno.readFile(`${runDir}/charts/${name}.png`));
      // The bit-identical pairs (loss and grad_norm of resume-native) are one strip of ticks.
      const minHeight = name.startsWith("diff-baseline_resume-native") ? 100 : 300;
      assert.ok(png.width >= 800 && png.height >= minHeight, `${name}: ${png.width}x${png.height}`);
    }
    // The divergent step is where the difference chart marks it.
    const diff = await Deno.readTextFile(`${runDir}/charts/diff-baseline_resume-universal.svg`);
    assert.match(diff, /first divergence @ 21/);
  });
});

Deno.test("renderRun() re-renders idempotently and prunes charts that no longer exist", async () => {
  await withTemp(async (tmp) => {
    const { runDir } = await makeFixtureRun(tmp, { verdict: "PASS" });
    await Deno.mkdir(`${runDir}/charts`, { recursive: true });
    await Deno.writeTextFile(`${runDir}/charts/diff-stale.svg`, "<svg/>");
    await Deno.writeTextFile(`${runDir}/charts/notes.txt`, "kept");
    await renderRun(runDir);
    const first = await Deno.readTextFile(`${runDir}/report.md`);
    await renderRun(runDir);
    assert.equal(await Deno.readTextFile(`${runDir}/report.md`), first);
    await assert.rejects(Deno.stat(`${runDir}/charts/diff-stale.svg`), Deno.errors.NotFound);
    assert.equal(await Deno.readTextFile(`${runDir}/charts/notes.txt`), "kept");
  });
});

Deno.test("renderRun() keeps 10,000-step charts readable by downsampling the drawn data", async () => {
  await withTemp(async (tmp) => {
    const { runDir } = await makeFixtureRun(tmp, {
      verdict: "FAIL",
      steps: 10_000,
      saveAt: 5000,
      repeats: 1,
    });
    await renderRun(runDir);
    const spec = JSON.parse(await Deno.readTextFile(`${runDir}/charts/loss.vl.json`));
    const points = spec.datasets.points as { step: number; phase: string }[];
    const perPhase = new Map<string, number>();
    for (const p of points) perPhase.set(p.phase, (perPhase.get(p.phase) ?? 0) + 1);
    assert.ok(
      perPhase.get("baseline")! < 2010,
      `baseline drew ${perPhase.get("baseline")} of 10000`,
    );
    assert.ok(
      points.some((p) => p.phase === "resume-universal" && p.step === 5001),
      "divergent step drawn",
    );
    const diff = JSON.parse(
      await Deno.readTextFile(`${runDir}/charts/diff-baseline_resume-universal.vl.json`),
    );
    const rows = diff.vconcat[0].layer[1].data.values as { step: number }[];
    assert.ok(
      rows.length < 2500 && rows.some((r) => r.step === 5001),
      `${rows.length} diff points`,
    );
    // Judging data is untouched: the report's table still shows the exact value at step 5001.
    const md = await Deno.readTextFile(`${runDir}/report.md`);
    assert.match(md, /\*\*5001 ← first divergence\*\*/);
  });
});

Deno.test("parity report renders a run given its experiment folder's latest link", async () => {
  await withTemp(async (tmp) => {
    const { runDir, summary } = await makeFixtureRun(tmp, { verdict: "PASS" });
    await Deno.symlink(summary.run_id, `${tmp}/quickstart/latest`);
    assert.equal(await resolveRunDir(`${tmp}/quickstart`), `${tmp}/quickstart/latest`);
    const { value, out } = await captureConsole(() => main(["report", `${tmp}/quickstart/latest`]));
    assert.equal(value, 0);
    assert.match(out, /report\.md/);
    assert.ok((await Deno.stat(`${runDir}/report.html`)).isFile);
  });
});

Deno.test("parity report exits 2 on a folder without summary.json and on bad usage", async () => {
  await withTemp(async (tmp) => {
    const missing = await captureConsole(() => main(["report", tmp]));
    assert.equal(missing.value, 2);
    assert.match(missing.err, /no summary\.json/);
    assert.equal((await captureConsole(() => main(["report"]))).value, 2);
    assert.equal((await captureConsole(() => main(["report", tmp, "--bogus"]))).value, 2);
    assert.equal((await captureConsole(() => main(["report", "--help"]))).value, 0);
  });
});

import assert from "node:assert/strict";
import { captureConsole } from "../../test/_testing/capture_console.ts";
import { parse } from "csv-parse/sync";
import type { RunSummary } from "../types/summary.ts";
import { makeFixtureRun } from "../../test/_testing/run_fixture.ts";
import { appendHistory, HISTORY_COLUMNS, previousRun, readHistory } from "./history.ts";
import { trendPoints } from "./history_page.ts";
import { main } from "../cli/main.ts";
import { decodePng } from "../../test/_testing/decode_png.ts";

async function twoRuns(tmp: string): Promise<RunSummary[]> {
  const pass = (await makeFixtureRun(tmp, {
    verdict: "PASS",
    runId: "20261128T020000Z-aa",
    finishedAt: "2026-11-28T02:00:41Z",
  })).summary;
  const fail = (await makeFixtureRun(tmp, {
    verdict: "FAIL",
    runId: "20261129T020000Z-bb",
    finishedAt: "2026-11-29T02:00:41Z",
  })).summary;
  return [pass, fail];
}

Deno.test("appendHistory() writes the header once and one row per comparison", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_history_" });
  try {
    const [pass, fail] = await twoRuns(tmp);
    // A comparison name with a comma and a quote must survive CSV quoting.
    fail.comparisons[0].name = 'baseline~resume-native, "quoted"';
    await appendHistory(tmp, pass);
    await appendHistory(tmp, fail);
    const text = await Deno.readTextFile(`${tmp}/history.csv`);
    assert.equal(text.split("\n")[0], HISTORY_COLUMNS.join(","));
    assert.equal(text.match(/^time,/gm)!.length, 1);
    const rows = parse(text, { columns: true }) as Record<string, string>[];
    assert.equal(rows.length, pass.comparisons.length + fail.comparisons.length);
    const diverged = rows.find((r) =>
      r.run_id === fail.run_id && r.comparison === "baseline~resume-universal"
    )!;
    assert.equal(diverged.verdict, "FAIL");
    assert.equal(diverged.comparison_verdict, "FAIL");
    assert.equal(diverged.first_divergent_step, "21");
    assert.equal(Number(diverged.max_abs), fail.comparisons[1].max_abs);
    assert.equal(diverged.git_commit, "a7997f1");
    assert.equal(diverged.time, "2026-11-29T02:00:41Z");
    const errored = rows.find((r) =>
      r.run_id === fail.run_id && r.comparison === "baseline~resume-plan"
    )!;
    assert.equal(errored.max_abs, "");
    assert.ok(rows.some((r) => r.comparison === 'baseline~resume-native, "quoted"'));
    const read = await readHistory(tmp);
    assert.equal(read.length, rows.length);
    const points = trendPoints(read);
    assert.equal(
      points.find((p) => p.run_id === fail.run_id && p.comparison === "baseline~resume-plan")!
        .max_abs,
      null,
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("appendHistory() refuses to append to a file with another header", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_history_" });
  try {
    const [pass] = await twoRuns(tmp);
    await Deno.writeTextFile(`${tmp}/history.csv`, "time,run,experiment\n");
    await assert.rejects(appendHistory(tmp, pass), /unexpected header/);
    assert.equal(await Deno.readTextFile(`${tmp}/history.csv`), "time,run,experiment\n");
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("appendHistory() migrates a file written before columns were appended, losing no row", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_history_" });
  try {
    const [pass, fail] = await twoRuns(tmp);
    const old = HISTORY_COLUMNS.slice(0, 11);
    const row =
      "2026-11-27T02:00:41Z,quickstart,r0,abc,PASS,baseline~resume-native,loss,exact,PASS,0,";
    await Deno.writeTextFile(`${tmp}/history.csv`, `${old.join(",")}\n${row}\n`);
    await appendHistory(tmp, pass);
    await appendHistory(tmp, fail, `${tmp}/quickstart/${fail.run_id}`);
    const rows = await readHistory(tmp);
    assert.equal(
      (await Deno.readTextFile(`${tmp}/history.csv`)).split("\n")[0],
      HISTORY_COLUMNS.join(","),
    );
    assert.equal(rows.length, 1 + pass.comparisons.length + fail.comparisons.length);
    assert.deepEqual([rows[0].run_id, rows[0].max_abs, rows[0].max_ulp], ["r0", "0", ""]);
    const last = rows.at(-1)!;
    assert.equal(last.run_path, `quickstart/${fail.run_id}`);
    assert.equal(trendPoints([last])[0].href, `../quickstart/${fail.run_id}/report.html`);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("parity history renders the trend chart and prints a Markdown table, newest first", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_history_" });
  try {
    const [pass, fail] = await twoRuns(tmp);
    const other = structuredClone(pass);
    other.experiment = "other";
    for (const s of [pass, fail, other]) await appendHistory(tmp, s);
    const { value, out } = await captureConsole(() =>
      main(["history", tmp, "--experiment", "quickstart"])
    );
    assert.equal(value, 0);
    const rows = out.split("\n").filter((l) => l.startsWith("| 2026-"));
    assert.equal(rows.length, pass.comparisons.length + fail.comparisons.length);
    assert.ok(rows[0].includes(fail.run_id), "newest run first");
    assert.ok(rows.every((r) => !r.includes("| other |")), "filtered by experiment");
    assert.ok(
      out.includes("| baseline\\~resume-universal | exact | ❌ FAIL | 0.082 | ") &&
        /\| ❌ FAIL \| 0\.082 \| [^|]+ULP[^|]+\| 21 \|/.test(out),
      out,
    );
    // Paths are printed as paths, not as a Markdown image of a local file.
    assert.doesNotMatch(out, /!\[/);
    assert.match(out, new RegExp(`trend: ${tmp}/history/index\\.html`));
    const page = await Deno.readTextFile(`${tmp}/history/index.html`);
    assert.match(page, /<table id="table-history">/);
    const png = decodePng(await Deno.readFile(`${tmp}/history/history-trend.png`));
    assert.ok(png.width > 1000);
    const spec = JSON.parse(await Deno.readTextFile(`${tmp}/history/history-trend.vl.json`));
    assert.equal(spec.data.values.length, rows.length);
    assert.match(
      await Deno.readTextFile(`${tmp}/history/history-trend.svg`),
      /parity history: quickstart/,
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("parity history exits 2 without history and on bad options", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_history_" });
  try {
    const none = await captureConsole(() => main(["history", tmp]));
    assert.equal(none.value, 2);
    assert.match(none.err, /no history/);
    assert.equal((await captureConsole(() => main(["history", tmp, "--limit", "0"]))).value, 2);
    assert.equal((await captureConsole(() => main(["history", tmp, "--experiment"]))).value, 2);
    assert.equal((await captureConsole(() => main(["history", tmp, "--nope"]))).value, 2);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("previousRun() compares only with the last run of the same resolved configuration", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_history_" });
  try {
    const [pass, fail] = await twoRuns(tmp);
    // Run 1 (PASS) under config A, run 2 (FAIL) under other --set values (config B).
    pass.config = "aaaaaaaaaaaaaaaa";
    fail.config = "bbbbbbbbbbbbbbbb";
    await appendHistory(tmp, pass);
    await appendHistory(tmp, fail);
    const rows = await readHistory(tmp);
    assert.equal(rows.find((r) => r.run_id === pass.run_id)!.config, pass.config);
    const later = { experiment: pass.experiment, started_at: "2026-11-30T02:00:00Z" };
    // A third run under config A compares with run 1, not with the newer run 2.
    assert.equal(
      previousRun(rows, { ...later, run_id: "20261130T020000Z-cc", config: pass.config })?.run_id,
      pass.run_id,
    );
    assert.equal(
      previousRun(rows, { ...later, run_id: "20261130T020000Z-cc", config: fail.config })?.run_id,
      fail.run_id,
    );
    assert.equal(
      previousRun(rows, { ...later, run_id: "20261130T020000Z-cc", config: "cccccccccccccccc" }),
      null,
      "a configuration never run before has no last run",
    );
    // A summary written before configurations were recorded compares with the newest run.
    assert.equal(
      previousRun(rows, { ...later, run_id: "20261130T020000Z-cc" })?.run_id,
      fail.run_id,
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

/// <reference lib="dom" />
import assert from "node:assert/strict";
import { launchChromium } from "../../test/_testing/chromium.ts";
import { makeFixtureRun } from "../../test/_testing/run_fixture.ts";
import { renderRun } from "./render_run.ts";
import { htmlTable } from "./html.ts";
import { scriptJson, scriptText } from "./_page.ts";
import { appendHistory } from "./history.ts";
import { renderHistoryView } from "./history_page.ts";

const TEST_OUTPUT = new URL("../../test_output/", import.meta.url);

Deno.test("renderHtml() report opens offline in Chromium with every chart rendered", async () => {
  // Debian's chromium, else the npm-shipped one; PARITY_CHROMIUM=system|npm|<path> forces one.
  const browser = await launchChromium();
  const tmp = await Deno.makeTempDir({ prefix: "parity_html_" });
  try {
    const { runDir } = await makeFixtureRun(tmp, { verdict: "FAIL", noisyRepeats: true });
    await renderRun(runDir);
    const html = await Deno.readTextFile(`${runDir}/report.html`);
    assert.doesNotMatch(html, /<script[^>]+src=/, "no external scripts");
    assert.doesNotMatch(html, /cdn\.|jsdelivr|unpkg/, "no CDN references");

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const consoleErrors: string[] = [];
    const failedRequests: string[] = [];
    const requests: string[] = [];
    page.on("console", (msg) => {
      if (msg.type() === "error") consoleErrors.push(msg.text());
    });
    page.on("pageerror", (error) => consoleErrors.push(String(error)));
    page.on(
      "requestfailed",
      (req) => failedRequests.push(`${req.url()}: ${req.failure()?.errorText}`),
    );
    page.on("request", (req) => requests.push(req.url()));
    await page.goto(new URL(`file://${runDir}/report.html`).href, { waitUntil: "load" });
    await page.waitForFunction(() => document.body.dataset.chartsRendered !== undefined, null, {
      timeout: 20_000,
    });
    const state = await page.evaluate(() => ({
      rendered: document.body.dataset.chartsRendered,
      total: document.body.dataset.chartsTotal,
      containers: [...document.querySelectorAll("div.chart")].map((node) => ({
        name: (node as HTMLElement).dataset.name,
        drawn: node.querySelector("svg, canvas") !== null,
        marks: node.querySelectorAll("svg path, svg line, svg rect").length,
      })),
      verdict: document.getElementById("verdict")?.textContent ?? "",
      verdictColour: getComputedStyle(document.querySelector("#verdict .v")!).backgroundColor,
      divergentRow: document.querySelector("tr.strong")?.textContent ?? "",
      text: document.body.innerText,
      toc: [...document.querySelectorAll("nav.toc a")].map((a) => a.getAttribute("href")!),
      ids: [...document.querySelectorAll("[id]")].map((e) => e.id),
      firstSection: document.querySelector("h2")?.id ?? "",
      cardBeforeToc: (document.querySelector(".card") === null) ||
        document.querySelector(".card")!.compareDocumentPosition(
            document.querySelector("nav.toc")!,
          ) === Node.DOCUMENT_POSITION_FOLLOWING,
    }));
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(failedRequests, []);
    assert.ok(
      requests.every((url) => url.startsWith("file://")),
      `only the file itself: ${requests}`,
    );
    let specs = 0;
    for await (const f of Deno.readDir(`${runDir}/charts`)) {
      if (f.name.endsWith(".vl.json")) specs++;
    }
    assert.equal(state.containers.length, specs, JSON.stringify(state.containers));
    assert.equal(state.rendered, String(state.containers.length));
    for (const c of state.containers) {
      assert.ok(c.drawn, `chart ${c.name} has an svg/canvas`);
      assert.ok(c.marks > 10, `chart ${c.name} drew marks (${c.marks})`);
    }
    // The verdict is a word on a coloured badge: nothing on the page needs an emoji font.
    assert.match(state.verdict, /^FAIL quickstart · 20261129T101500Z-ab12cd$/);
    assert.equal(state.verdictColour, "rgb(207, 34, 46)");
    assert.doesNotMatch(state.text, /\p{Extended_Pictographic}/u);
    assert.match(state.divergentRow, /^21 ← first divergence/);
    // The table of contents: every entry points at a section; state checks come first.
    assert.ok(state.toc.length >= 6, state.toc.join(" "));
    for (const href of state.toc) assert.ok(state.ids.includes(href.slice(1)), href);
    assert.equal(state.firstSection, "state");
    assert.ok(state.cardBeforeToc);
    // Reset zoom re-embeds the chart.
    await page.click("button[data-reset=chart-0]");
    await page.waitForFunction(() => document.querySelector("#chart-0 svg") !== null);
    assert.deepEqual(consoleErrors, []);
    await Deno.mkdir(TEST_OUTPUT, { recursive: true });
    await page.screenshot({
      path: new URL("report_html.png", TEST_OUTPUT).pathname,
      fullPage: true,
    });
  } finally {
    await browser.close();
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("scriptJson() and scriptText() cannot close the script element early", () => {
  const json = scriptJson({ label: "</script><script>alert(1)</script>", amp: "a&b" });
  assert.doesNotMatch(json, /<\/script/i);
  assert.deepEqual(JSON.parse(json), { label: "</script><script>alert(1)</script>", amp: "a&b" });
  assert.equal(scriptText('x = "</SCRIPT>";'), 'x = "<\\/SCRIPT>";');
});

Deno.test("htmlTable() escapes cells and marks numeric columns", () => {
  const html = htmlTable({
    id: "t",
    title: "T",
    headers: ["name", "value"],
    numeric: [false, true],
    rows: [[{ text: "<b>&" }, { text: "1.5" }]],
    empty: "none",
  });
  assert.match(html, /<td>&lt;b&gt;&amp;<\/td><td class="num">1\.5<\/td>/);
  assert.equal(
    htmlTable({
      id: "e",
      title: "E",
      headers: ["a"],
      numeric: [false],
      rows: [],
      empty: "nothing <here>",
    }),
    '<p class="empty">nothing &lt;here&gt;</p>',
  );
});

Deno.test("parity history page: the trend renders offline and each point links to its run's report", async () => {
  const browser = await launchChromium();
  const tmp = await Deno.makeTempDir({ prefix: "parity_history_html_" });
  try {
    for (
      const [verdict, runId, finishedAt] of [
        ["PASS", "20261128T020000Z-aa", "2026-11-28T02:00:41Z"],
        ["FAIL", "20261129T020000Z-bb", "2026-11-29T02:00:41Z"],
      ] as const
    ) {
      const run = await makeFixtureRun(tmp, { verdict, runId, finishedAt });
      await renderRun(run.runDir);
      await appendHistory(tmp, run.summary, run.runDir);
    }
    const view = (await renderHistoryView(tmp))!;
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto(new URL(`file://${view.html}`).href, { waitUntil: "load" });
    await page.waitForFunction(() => document.body.dataset.chartsRendered !== undefined);
    const state = await page.evaluate(() => ({
      rendered: document.body.dataset.chartsRendered,
      tableLinks: [...document.querySelectorAll("#table-history a")].map((a) =>
        (a as HTMLAnchorElement).href
      ),
    }));
    assert.deepEqual(errors, []);
    assert.equal(state.rendered, "1");
    // Every run link in the table opens an existing report.
    assert.ok(state.tableLinks.length > 0);
    for (const href of new Set(state.tableLinks)) {
      assert.ok((await Deno.stat(new URL(href))).isFile, href);
    }
    // Clicking a point of the trend opens that run's report.
    await page.locator("#chart-0 svg g.mark-symbol path").first().click({ force: true });
    await page.waitForURL(/\/quickstart\/2026112\dT020000Z-\w+\/report\.html$/, {
      timeout: 10_000,
    });
  } finally {
    await browser.close();
    await Deno.remove(tmp, { recursive: true });
  }
});

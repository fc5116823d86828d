/// <reference lib="dom" />
import assert from "node:assert/strict";
import { launchChromium } from "../../test/_testing/chromium.ts";
import { makeFixtureRun } from "../../test/_testing/run_fixture.ts";
import { renderRun } from "./render_run.ts";
import { htmlTable, scriptJson, scriptText } from "./html.ts";

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
      divergentRow: document.querySelector("tr.strong")?.textContent ?? "",
    }));
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(failedRequests, []);
    assert.ok(
      requests.every((url) => url.startsWith("file://")),
      `only the file itself: ${requests}`,
    );
    assert.equal(state.containers.length, 5, JSON.stringify(state.containers));
    assert.equal(state.rendered, String(state.containers.length));
    for (const c of state.containers) {
      assert.ok(c.drawn, `chart ${c.name} has an svg/canvas`);
      assert.ok(c.marks > 10, `chart ${c.name} drew marks (${c.marks})`);
    }
    assert.match(state.verdict, /FAIL — quickstart · 20261129T101500Z-ab12cd/);
    assert.match(state.divergentRow, /^21 ← first divergence/);
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

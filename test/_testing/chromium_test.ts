/// <reference lib="dom" />
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  ChromiumError,
  launchChromium,
  npmChromium,
  npmChromiumCache,
  resolveChromium,
} from "./chromium.ts";

/** A ChromiumError whose message is one sentence on one line. */
function oneSentence(pattern: RegExp): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof ChromiumError, String(error));
    assert.doesNotMatch(error.message, /\n/);
    assert.match(error.message, /\.$/);
    assert.match(error.message, pattern);
    return true;
  };
}

// Runs in CI too, where Debian's chromium is installed: the npm path must keep working.
Deno.test("launchChromium() starts the npm-shipped Chromium headless with its own libraries", async () => {
  const resolved = await npmChromium();
  assert.equal(resolved.source, "npm");
  const version = resolved.label.split(" ").at(-1)!;
  assert.equal(resolved.executablePath, join(npmChromiumCache(version), "chromium"));
  assert.ok(Deno.statSync(join(resolved.env.LD_LIBRARY_PATH, "libnss3.so")).isFile);
  const browser = await launchChromium({ choice: "npm" });
  try {
    assert.equal(browser.version().split(".")[0], version.split(".")[0]);
    const page = await browser.newPage();
    await page.setContent(
      `<svg width="200" height="50"><text id="t" x="5" y="30">loss 1.25</text></svg>` +
        `<script>document.body.dataset.ready = "yes"</script>`,
    );
    const state = await page.evaluate(() => ({
      ready: document.body.dataset.ready,
      textWidth: (document.getElementById("t") as unknown as SVGTextElement).getBBox().width,
    }));
    assert.equal(state.ready, "yes");
    assert.ok(state.textWidth > 20, `text has a width (${state.textWidth})`);
  } finally {
    await browser.close();
  }
});

Deno.test("resolveChromium() takes Debian's chromium when it exists, else the npm-shipped one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "parity_chromium_" });
  try {
    const fake = join(dir, "chromium");
    await Deno.writeTextFile(fake, "");
    const system = await resolveChromium({ choice: "", systemPath: fake });
    assert.deepEqual([system.source, system.executablePath, system.env], ["system", fake, {}]);
    const npm = await resolveChromium({ choice: "", systemPath: join(dir, "missing") });
    assert.equal(npm.source, "npm");
    assert.equal((await resolveChromium({ choice: "npm", systemPath: fake })).source, "npm");
    const path = await resolveChromium({ choice: fake, systemPath: join(dir, "missing") });
    assert.deepEqual([path.source, path.executablePath], ["path", fake]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("resolveChromium() refuses an unknown choice and a missing browser in one sentence", async () => {
  await assert.rejects(
    resolveChromium({ choice: "firefox" }),
    oneSentence(/PARITY_CHROMIUM must be "system", "npm" or an absolute path/),
  );
  await assert.rejects(
    resolveChromium({ choice: "system", systemPath: "/nonexistent/chromium" }),
    oneSentence(/PARITY_CHROMIUM=system but \/nonexistent\/chromium is missing: install it/),
  );
  await assert.rejects(
    resolveChromium({ choice: "/nonexistent/chromium" }),
    oneSentence(/PARITY_CHROMIUM=\/nonexistent\/chromium names no file/),
  );
});

Deno.test("launchChromium() fails in one sentence when the browser does not start", async () => {
  await assert.rejects(
    launchChromium({ choice: "/bin/false" }),
    oneSentence(/^\/bin\/false did not start \(set PARITY_CHROMIUM=.*\): browserType\.launch/),
  );
});

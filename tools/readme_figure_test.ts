import assert from "node:assert/strict";
import { drawCaughtDivergence, FAULT, FIGURE } from "./readme_figure.ts";

Deno.test("the README's caught divergence is what the quickstart fault run draws and says", async () => {
  const dir = await Deno.makeTempDir({ prefix: "parity-readme-figure-" });
  try {
    const drawn = await drawCaughtDivergence(dir);
    assert.equal(drawn.code, 1, `the quickstart with ${FAULT} must FAIL`);
    const committed = await Deno.readFile(FIGURE);
    assert.ok(
      committed.length === drawn.png.length && committed.every((b, i) => b === drawn.png[i]),
      `${FIGURE} differs from the chart the run draws: npx -y deno@2.9.6 task readme-figure`,
    );
    const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
    for (const line of drawn.card) {
      assert.ok(readme.includes(line), `README.md lacks the card line the run prints: ${line}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

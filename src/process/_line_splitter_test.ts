import { deepEqual, equal } from "node:assert/strict";
import { LineSplitter } from "./_line_splitter.ts";

Deno.test("LineSplitter joins lines split across chunks and keeps the unterminated tail", () => {
  const splitter = new LineSplitter();
  deepEqual(splitter.push("ab"), []);
  deepEqual(splitter.push("c\nde"), ["abc"]);
  deepEqual(splitter.push("f\r\n\ng"), ["def", ""]);
  deepEqual(splitter.push(""), []);
  equal(splitter.flush(), "g");
  equal(splitter.flush(), null);
});

Deno.test("LineSplitter ends lines at \\r (progress bars), \\r\\n and \\n, also across chunks", () => {
  const splitter = new LineSplitter();
  deepEqual(splitter.push(" 10%\r 20%\r 30%\r"), [" 10%", " 20%", " 30%"]);
  deepEqual(splitter.push("\ndone\r"), ["done"]);
  deepEqual(splitter.push("\nnext\r\n"), ["next"]);
  deepEqual(splitter.push("a\r\rb\n"), ["a", "", "b"]);
  equal(splitter.flush(), null);
});

Deno.test("LineSplitter cuts a line longer than the maximum and counts it", () => {
  const splitter = new LineSplitter(8);
  deepEqual(splitter.push("0123"), []);
  deepEqual(splitter.push("456789abc"), []);
  deepEqual(splitter.push("def\nshort\n"), ["01234567", "short"]);
  equal(splitter.truncatedLines, 1);
  deepEqual(splitter.push("x".repeat(20)), []);
  equal(splitter.flush(), "x".repeat(8));
  equal(splitter.truncatedLines, 2);
});

Deno.test("LineSplitter is linear in bytes: a 64 MB line in 64 KiB chunks takes well under 2 s", () => {
  const splitter = new LineSplitter(Infinity);
  const chunk = "a".repeat(64 * 1024);
  const t0 = performance.now();
  for (let i = 0; i < 1024; i++) deepEqual(splitter.push(chunk), []);
  const [line] = splitter.push("\n");
  const ms = performance.now() - t0;
  equal(line.length, 64 * 1024 * 1024);
  equal(ms < 2000, true, `took ${Math.round(ms)} ms`);
});

Deno.test("LineSplitter is linear in lines too: many short lines per chunk", () => {
  const splitter = new LineSplitter();
  const chunk = "step\n".repeat(13_000);
  const t0 = performance.now();
  let count = 0;
  for (let i = 0; i < 200; i++) count += splitter.push(chunk).length;
  equal(count, 13_000 * 200);
  equal(performance.now() - t0 < 2000, true);
});

import { equal, ok } from "node:assert/strict";
import { LogTail, TAIL_MAX_LINE_CHARS } from "./_log_tail.ts";

Deno.test("LogTail keeps the last lines within the line cap", () => {
  const tail = new LogTail(3, 1000);
  equal(tail.text(), "");
  for (let i = 1; i <= 5; i++) tail.add(`line ${i}`);
  equal(tail.text(), "line 3\nline 4\nline 5");
});

Deno.test("LogTail drops old lines to stay within the size cap and cuts huge lines", () => {
  const tail = new LogTail(40, 100);
  for (let i = 0; i < 10; i++) tail.add("x".repeat(30) + i);
  const text = tail.text();
  ok(text.length <= 100, `${text.length} chars`);
  ok(text.endsWith("x9"));
  tail.add("y".repeat(10_000));
  equal(tail.text(), "y".repeat(TAIL_MAX_LINE_CHARS) + "…[cut]");
});

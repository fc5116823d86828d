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

import assert from "node:assert/strict";
import { deadExports, functionLengths, maskSource } from "./code_figures.ts";

const lengths = (source: string) =>
  functionLengths(source).map((f) => `${f.name}@${f.line}:${f.lines}`);

Deno.test("functionLengths() measures declarations, arrows and class methods", () => {
  const source = [
    "export function one(a: number): number {", // 1
    "  return a;",
    "}",
    "const two = async (x: string) => {", // 4
    "  await x;",
    "",
    "};",
    "const three = <T,>(t: T): T => t;", // 8
    "class Box {",
    "  private constructor(readonly v: number) {}", // 10
    "  static make(v: number): Box {", // 11
    "    if (v) {",
    "      return new Box(v);",
    "    }",
    "    return new Box(0);",
    "  }",
    "}",
  ].join("\n");
  assert.deepEqual(lengths(source), [
    "one@1:3",
    "two@4:4",
    "three@8:1",
    "Box.constructor@10:1",
    "Box.make@11:6",
  ]);
});

Deno.test("functionLengths() ignores braces in strings, comments, templates and regexes", () => {
  const source = [
    "function tricky(): string {", // 1
    '  const a = "}}}";',
    "  // } a closing brace in a comment",
    "  /* { */",
    "  const t = `}${a.replace(/[}]/g, '{')}}`;",
    "  return t;",
    "}",
    "function after() {}", // 8
  ].join("\n");
  assert.deepEqual(lengths(source), ["tricky@1:7", "after@8:1"]);
});

Deno.test("functionLengths() skips object return types and overload signatures", () => {
  const source = [
    "function f(x: number): string;", // an overload: no body
    "function f(x: number): { a: number } | null {", // 2
    "  return { a: x };",
    "}",
    "const g = (o: { k: string }): { k: string } => ({", // 5
    "  k: o.k,",
    "});",
  ].join("\n");
  assert.deepEqual(lengths(source), ["f@2:3", "g@5:3"]);
});

Deno.test("maskSource() keeps offsets and newlines", () => {
  const source = 'const s = "a\\"b"; // c\nconst t = `x${1}y`;';
  const masked = maskSource(source);
  assert.equal(masked.length, source.length);
  assert.equal(masked.split("\n").length, 2);
  assert.ok(!masked.includes("a\\"));
  assert.ok(masked.includes("${1}"));
});

Deno.test("deadExports() counts re-exports as imports and the entry's exports as used", () => {
  const files = new Map([
    ["/s/a.ts", "export function used() {}\nexport const unused = 1;\nexport type T = 1;"],
    ["/s/mod.ts", 'export { used } from "./a.ts";\nexport type { T } from "./a.ts";'],
    ["/s/main.ts", 'import { used } from "./mod.ts";\nexport const entry = used;'],
  ]);
  assert.deepEqual(deadExports(files, "/s/main.ts"), [
    { file: "/s/a.ts", name: "unused" },
    { file: "/s/mod.ts", name: "T" },
  ]);
});

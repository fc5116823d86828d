/**
 * Code figures of a checkout's `src/` tree (non-test `.ts` files): the largest files, the
 * functions over {@link LONG_FUNCTION} lines and the longest ones, and the exports no other file
 * imports. Issue 24 records these before and after a refactoring.
 *
 * ```sh
 * npx -y deno@2.9.6 run -A tools/code_figures.ts [checkout]   # default: the current folder
 * ```
 *
 * Function bodies are found by a brace-matching scan over the source with its strings, comments,
 * template-literal text and regex literals blanked out: `function name(`, `const name = (…) =>`
 * (also `async`), and class methods. It is a measuring tool, not a parser: good enough for this
 * code base's style, which `deno fmt` keeps regular.
 *
 * @module
 */

import { join, relative, resolve } from "node:path";

/** Functions longer than this many lines count as long. */
export const LONG_FUNCTION = 80;

/** One function found by {@link functionLengths}. */
export interface FunctionLength {
  /** The function's name (`Class.method` for methods). */
  name: string;
  /** First line (1-based): the line naming it. */
  line: number;
  /** Lines from the naming line to the closing brace, both included. */
  lines: number;
}

/** Test code: tests, test helpers and test data (the structure tests of `test/` exempt it too). */
export function isTestCode(path: string): boolean {
  return /_test\.ts$|(^|\/)_test|(^|\/)_testing|\/testdata\//.test(path);
}

/**
 * `source` with every string, comment, template-literal text and regex literal replaced by spaces
 * (newlines kept, so offsets and line numbers still match). `${…}` inside templates stays code.
 */
export function maskSource(source: string): string {
  const out = source.split("");
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== "\n") out[k] = " ";
  };
  // Each open template literal pushes the brace depth at which its `${` expression closes.
  const templates: number[] = [];
  let depth = 0;
  let i = 0;
  let lastSignificant = "";
  const n = source.length;
  const scanTemplate = (start: number): number => {
    // From just after "`" or "}" of an expression: to the closing "`" or the next "${".
    let j = start;
    while (j < n) {
      const c = source[j];
      if (c === "\\") j += 2;
      else if (c === "`") {
        blank(start, j);
        return j + 1;
      } else if (c === "$" && source[j + 1] === "{") {
        blank(start, j);
        templates.push(depth);
        depth++;
        return j + 2;
      } else j++;
    }
    blank(start, n);
    return n;
  };
  while (i < n) {
    const c = source[i];
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const stop = end === -1 ? n : end;
      blank(i, stop);
      i = stop;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end === -1 ? n : end + 2;
      blank(i, stop);
      i = stop;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < n && source[j] !== c && source[j] !== "\n") j += source[j] === "\\" ? 2 : 1;
      blank(i + 1, j);
      i = j + 1;
      lastSignificant = c;
    } else if (c === "`") {
      i = scanTemplate(i + 1);
      lastSignificant = "`";
    } else if (c === "/" && _regexMayStart(lastSignificant)) {
      let j = i + 1;
      let inClass = false;
      while (j < n && source[j] !== "\n") {
        const r = source[j];
        if (r === "\\") j++;
        else if (r === "[") inClass = true;
        else if (r === "]") inClass = false;
        else if (r === "/" && !inClass) break;
        j++;
      }
      blank(i + 1, j);
      i = j + 1;
      lastSignificant = "/";
    } else {
      if (c === "{") depth++;
      else if (c === "}") {
        depth--;
        if (templates.length > 0 && templates[templates.length - 1] === depth) {
          templates.pop();
          i = scanTemplate(i + 1);
          lastSignificant = "`";
          continue;
        }
      }
      if (!/\s/.test(c)) lastSignificant = /[\w$]/.test(c) ? _wordEndingAt(source, i) : c;
      i++;
    }
  }
  return out.join("");
}

/** Every function of `source` and its length in lines, in source order. */
export function functionLengths(source: string): FunctionLength[] {
  const code = maskSource(source);
  const found: { name: string; start: number; end: number }[] = [];
  const named = /\bfunction\s*\*?\s*([A-Za-z_$][\w$]*)\s*[<(]/g;
  for (const m of code.matchAll(named)) {
    const end = _bodyEnd(code, m.index + m[0].length - 1, "{");
    if (end !== null) found.push({ name: m[1], start: m.index, end });
  }
  const arrow = /\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=;]*)?=\s*(?:async\s*)?([<(])/g;
  for (const m of code.matchAll(arrow)) {
    const end = _bodyEnd(code, m.index + m[0].length - 1, "=>");
    if (end !== null) found.push({ name: m[1], start: m.index, end });
  }
  for (const method of _classMethods(code)) found.push(method);
  found.sort((x, y) => x.start - y.start);
  const lineOf = _lineIndex(code);
  return found.map((f) => ({
    name: f.name,
    line: lineOf(f.start),
    lines: lineOf(f.end) - lineOf(f.start) + 1,
  }));
}

/** One exported symbol of a file. */
interface Export {
  file: string;
  name: string;
}

/** What a file imports: symbol names per resolved file, `*` for a whole module. */
type Imports = Map<string, Set<string>>;

/**
 * The exported symbols of `files` (path → source) that no other file imports. Re-exports
 * (`export { x } from`, `export * from`) count as imports; `entry`'s exports count as used;
 * `alsoImporting` (e.g. the tests) import but export nothing that counts.
 */
export function deadExports(
  files: ReadonlyMap<string, string>,
  entry: string,
  alsoImporting: ReadonlyMap<string, string> = new Map(),
): Export[] {
  const imported = new Map<string, Set<string>>();
  for (const [path, source] of [...files, ...alsoImporting]) {
    for (const [target, names] of _importsOf(path, maskKeepingStrings(source))) {
      if (target === path) continue;
      const set = imported.get(target) ?? new Set<string>();
      for (const name of names) set.add(name);
      imported.set(target, set);
    }
  }
  const dead: Export[] = [];
  for (const [path, source] of files) {
    if (path === entry) continue;
    const used = imported.get(path) ?? new Set<string>();
    if (used.has("*")) continue;
    for (const name of _exportsOf(maskKeepingStrings(source))) {
      if (!used.has(name)) dead.push({ file: path, name });
    }
  }
  return dead;
}

/** `source` with comments blanked but strings kept (import specifiers are strings). */
export function maskKeepingStrings(source: string): string {
  const masked = maskSource(source);
  const out = masked.split("");
  // Put back the text of quoted strings: the mask blanked their insides only.
  for (const m of source.matchAll(/(["'])((?:\\.|(?!\1)[^\\\n])*)\1/g)) {
    const open = m.index;
    if (masked[open] !== m[1]) continue; // inside a comment or template text
    for (let k = 0; k < m[2].length; k++) out[open + 1 + k] = m[2][k];
  }
  return out.join("");
}

function _importsOf(path: string, code: string): Imports {
  const imports: Imports = new Map();
  const add = (spec: string, names: string[]) => {
    if (!spec.startsWith(".")) return;
    const target = resolve(path, "..", spec);
    const set = imports.get(target) ?? new Set<string>();
    for (const name of names) set.add(name);
    imports.set(target, set);
  };
  const braced =
    /\b(?:import|export)\s+(?:type\s+)?(?:[\w$]+\s*,\s*)?\{([^}]*)\}\s*from\s*"([^"]+)"/g;
  for (const m of code.matchAll(braced)) {
    const names = m[1].split(",").map((s) => s.trim().replace(/^type\s+/, "").split(/\s+as\s+/)[0])
      .filter((s) => s.length > 0);
    add(m[2], names);
  }
  for (
    const m of code.matchAll(
      /\b(?:import|export)\s+(?:type\s+)?\*\s*(?:as\s+[\w$]+\s*)?from\s*"([^"]+)"/g,
    )
  ) {
    add(m[1], ["*"]);
  }
  for (const m of code.matchAll(/\bimport\s+(?:type\s+)?([\w$]+)\s*(?:,|from)/g)) {
    const spec = code.slice(m.index).match(/from\s*"([^"]+)"/);
    if (m[1] !== "type" && spec) add(spec[1], ["default"]);
  }
  for (const m of code.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)) add(m[1], ["*"]);
  return imports;
}

function _exportsOf(code: string): string[] {
  const names: string[] = [];
  const declared =
    /\bexport\s+(?:declare\s+)?(?:async\s+)?(?:abstract\s+)?(?:function\s*\*?|const|let|var|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/g;
  for (const m of code.matchAll(declared)) names.push(m[1]);
  if (/\bexport\s+default\b/.test(code)) names.push("default");
  for (const m of code.matchAll(/\bexport\s+(?:type\s+)?\{([^}]*)\}(\s*from)?/g)) {
    for (const part of m[1].split(",")) {
      const words = part.trim().replace(/^type\s+/, "").split(/\s+as\s+/);
      const name = (words[1] ?? words[0]).trim();
      if (name.length > 0) names.push(name);
    }
  }
  return names;
}

/** Whether a `/` after `previous` (the last significant token) starts a regex literal. */
function _regexMayStart(previous: string): boolean {
  if (previous === "") return true;
  if (/^[\w$]+$/.test(previous)) {
    return ["return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw"]
      .includes(previous);
  }
  return !/[)\]}"'`]/.test(previous);
}

function _wordEndingAt(source: string, i: number): string {
  let start = i;
  while (start > 0 && /[\w$]/.test(source[start - 1])) start--;
  let end = i + 1;
  while (end < source.length && /[\w$]/.test(source[end])) end++;
  return source.slice(start, end);
}

/** Offset of the bracket matching the one at `open` (`(`, `[`, `{` or `<`), or null. */
function _matching(code: string, open: number): number | null {
  const pairs: Record<string, string> = { "(": ")", "[": "]", "{": "}", "<": ">" };
  const close = pairs[code[open]];
  const angle = code[open] === "<";
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    const c = code[i];
    if (angle && c === "=" && code[i + 1] === ">") {
      i++; // an arrow inside a type parameter list is no closing bracket
      continue;
    }
    if (c === code[open]) depth++;
    else if (c === close && --depth === 0) return i;
    else if (!angle && ")]}".includes(c) && depth <= 0) return null;
  }
  return null;
}

/**
 * The end of a function's body, given the offset of its type parameters' `<` or its parameters'
 * `(`: past the parameters and an optional return type (whose object types are skipped) to the
 * body's `{` (or, for an arrow, past `=>` to its block or expression). Null for a signature
 * without body (an overload) or something that is not a function after all.
 */
function _bodyEnd(code: string, open: number, until: "{" | "=>"): number | null {
  let i = open;
  if (code[i] === "<") {
    const end = _matching(code, i);
    if (end === null) return null;
    i = _skipSpace(code, end + 1);
  }
  if (code[i] !== "(") return null;
  const params = _matching(code, i);
  if (params === null) return null;
  i = _skipSpace(code, params + 1);
  if (code[i] === ":") {
    // A return type: skip bracketed parts; a `{` right after `:`, `|`, `&`, `,` or `=>` is a type.
    let previous = ":";
    i = _skipSpace(code, i + 1);
    while (i < code.length) {
      const c = code[i];
      if (until === "=>" && c === "=" && code[i + 1] === ">") break;
      if (c === "{" && until === "{" && !/^(:|\||&|,|=>|<|\()$/.test(previous)) break;
      if (c === ";" || (c === "=" && code[i + 1] !== ">")) return null;
      if ("([{<".includes(c)) {
        const end = _matching(code, i);
        if (end === null) return null;
        previous = code[end];
        i = _skipSpace(code, end + 1);
        continue;
      }
      previous = c === "=" && code[i + 1] === ">" ? "=>" : c;
      if (previous === "=>") i++;
      if (/[\w$.]/.test(c)) {
        while (i < code.length && /[\w$.]/.test(code[i])) i++;
        previous = "w";
        i = _skipSpace(code, i);
        continue;
      }
      i = _skipSpace(code, i + 1);
    }
  }
  if (until === "=>") {
    if (code[i] !== "=" || code[i + 1] !== ">") return null;
    i = _skipSpace(code, i + 2);
    if (code[i] === "{" || code[i] === "(" || code[i] === "[") return _matching(code, i);
    return _expressionEnd(code, i);
  }
  return code[i] === "{" ? _matching(code, i) : null;
}

/** The end of an expression-bodied arrow: the first `,` `;` or closing bracket at depth 0. */
function _expressionEnd(code: string, from: number): number {
  for (let i = from; i < code.length; i++) {
    const c = code[i];
    if ("([{".includes(c)) {
      const end = _matching(code, i);
      if (end === null) return i;
      i = end;
    } else if (",;)]}".includes(c)) return i - 1;
  }
  return code.length - 1;
}

function _skipSpace(code: string, i: number): number {
  while (i < code.length && /\s/.test(code[i])) i++;
  return i;
}

/** The methods (and constructors, accessors) of every class in `code`. */
function _classMethods(code: string): { name: string; start: number; end: number }[] {
  const methods: { name: string; start: number; end: number }[] = [];
  const classes = /\bclass\s+([A-Za-z_$][\w$]*)[^{;]*\{/g;
  const member =
    /(?:^|[;}\n])\s*(?:(?:public|private|protected|static|async|override|readonly|get|set)\s+)*\*?\s*(#?[A-Za-z_$][\w$]*)\s*(?:<|\()/g;
  for (const m of code.matchAll(classes)) {
    const open = m.index + m[0].length - 1;
    const close = _matching(code, open);
    if (close === null) continue;
    // Only members at the class body's own depth: blank nested bodies before matching.
    const body = code.slice(open + 1, close).split("");
    let depth = 0;
    for (let k = 0; k < body.length; k++) {
      const c = body[k];
      if (c === "{") depth++;
      else if (c === "}") depth--;
      else if (depth > 0 && c !== "\n") body[k] = " ";
    }
    const top = body.join("");
    for (const mm of top.matchAll(member)) {
      const name = mm[1];
      if (["if", "for", "while", "switch", "catch", "return", "function"].includes(name)) continue;
      const at = open + 1 + mm.index + mm[0].length - 1;
      const end = _bodyEnd(code, at, "{");
      if (end !== null) {
        const start = open + 1 + mm.index + mm[0].indexOf(name);
        methods.push({ name: `${m[1]}.${name}`, start, end });
      }
    }
  }
  return methods;
}

function _lineIndex(code: string): (offset: number) => number {
  const starts = [0];
  for (let i = 0; i < code.length; i++) if (code[i] === "\n") starts.push(i + 1);
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
}

/** How often `name` stands as a whole word in `source`'s code (comments and strings blanked). */
function _usesIn(source: string, name: string): number {
  const escaped = name.replace(/[$]/g, "\\$");
  return [...maskSource(source).matchAll(new RegExp(`(?<![\\w$])${escaped}(?![\\w$])`, "g"))]
    .length;
}

async function _sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) out.push(...await _sources(path));
    else if (entry.name.endsWith(".ts")) out.push(path);
  }
  return out.sort();
}

/** The figures of `checkout`'s `src/` tree, as printed lines. */
export async function codeFigures(checkout: string): Promise<string[]> {
  const src = resolve(checkout, "src");
  const files = new Map<string, string>();
  const tests = new Map<string, string>();
  for (const path of await _sources(src)) {
    (isTestCode(path) ? tests : files).set(path, await Deno.readTextFile(path));
  }
  const rel = (path: string) => relative(src, path);
  const lineCount = (text: string) => text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  const sizes = [...files].map(([path, text]) => ({ path, lines: lineCount(text) }))
    .sort((x, y) => y.lines - x.lines || x.path.localeCompare(y.path));
  const functions = [...files].flatMap(([path, text]) =>
    functionLengths(text).map((f) => ({ ...f, path }))
  ).sort((x, y) => y.lines - x.lines || x.path.localeCompare(y.path) || x.line - y.line);
  const long = functions.filter((f) => f.lines > LONG_FUNCTION);
  const dead = deadExports(files, join(src, "cli", "main.ts"));
  const facade = dead.filter((d) => d.file.endsWith("mod.ts"));
  const deadEvenForTests = deadExports(files, join(src, "cli", "main.ts"), tests);
  const ownOnly = deadEvenForTests.filter((d) => !d.file.endsWith("mod.ts"));
  const unused = ownOnly.filter((d) => _usesIn(files.get(d.file)!, d.name) === 1);
  const total = sizes.reduce((sum, s) => sum + s.lines, 0);
  return [
    `src/: ${files.size} non-test .ts files, ${total} lines`,
    "",
    "largest files (lines):",
    ...sizes.slice(0, 10).map((s) => `  ${String(s.lines).padStart(5)}  ${rel(s.path)}`),
    "",
    `functions over ${LONG_FUNCTION} lines: ${long.length} (of ${functions.length} found)`,
    "longest functions (lines):",
    ...functions.slice(0, 10).map((f) =>
      `  ${String(f.lines).padStart(5)}  ${f.name}  ${rel(f.path)}:${f.line}`
    ),
    "",
    `dead exports (imported by no other non-test file): ${dead.length}` +
    ` (${facade.length} of them in mod.ts facades; ${deadEvenForTests.length} not imported by` +
    " src tests either)",
    `exports no other file (tests included) imports, outside facades: ${ownOnly.length}`,
    `unused exports (named only where declared: dead code): ${unused.length}` +
    (unused.length > 0 ? ` (${unused.map((d) => `${rel(d.file)} ${d.name}`).join(", ")})` : ""),
  ];
}

if (import.meta.main) {
  const lines = await codeFigures(Deno.args[0] ?? ".");
  console.log(lines.join("\n"));
}

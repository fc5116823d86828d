/**
 * Reading experiment files: YAML (with line:column in syntax errors, duplicate keys rejected
 * with their path) or strict JSON for `.json` files. The result is the raw parsed mapping; see
 * `validate_experiment.ts` for overrides, matrix expansion and the schema.
 *
 * @module
 */

import { isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import { formatPath, isRecord } from "./_path.ts";
import { parseStrictJson } from "./_strict_json.ts";
import { ExperimentFileError, type ValidationError } from "./validation_errors.ts";

/** Whether a file name is read as JSON (by extension); everything else is read as YAML. */
export function isJsonFileName(name: string): boolean {
  return name.toLowerCase().endsWith(".json");
}

/**
 * Parses an experiment file's text. `sourceName` decides the format (`.json` → strict JSON,
 * otherwise YAML) and names the source in errors.
 *
 * @throws {ExperimentFileError} on a syntax error, a duplicate key, an empty file or a top level
 * that is not a mapping.
 * @example
 * ```ts
 * const raw = loadExperimentText("name: demo\n", "demo.yaml"); // { name: "demo" }
 * ```
 */
export function loadExperimentText(text: string, sourceName: string): Record<string, unknown> {
  const value = isJsonFileName(sourceName)
    ? parseJson(text, sourceName)
    : parseYaml(text, sourceName);
  return requireMapping(value, sourceName);
}

/**
 * Reads and parses an experiment file (see {@link loadExperimentText}).
 *
 * @throws {ExperimentFileError} when the file cannot be read or parsed.
 */
export async function loadExperimentFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    const reason = error instanceof Deno.errors.NotFound
      ? "file not found"
      : `cannot read the file: ${(error as Error).message}`;
    throw new ExperimentFileError(path, [{ path: "", message: reason }]);
  }
  return loadExperimentText(text, path);
}

function parseJson(text: string, source: string): unknown {
  const result = parseStrictJson(text);
  if (!result.ok) {
    if (text.trim() === "") fail(source, "the file is empty");
    const { line, column, message } = result.syntax;
    fail(source, `JSON syntax error at line ${line}, column ${column}: ${message}`);
  }
  if (result.duplicates.length > 0) {
    throw new ExperimentFileError(
      source,
      result.duplicates.map((d) => ({
        path: d.path ?? "",
        message: `duplicate key (line ${d.line}, column ${d.column})`,
      })),
    );
  }
  return result.value;
}

function parseYaml(text: string, source: string): unknown {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, {
    uniqueKeys: false, // duplicates are found below, with their path
    merge: true,
    prettyErrors: true,
    lineCounter,
  });
  const syntax = doc.errors.map((error): ValidationError => {
    const firstLine = error.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
    const where = error.linePos?.[0];
    const at = where ? ` at line ${where.line}, column ${where.col}` : "";
    return { path: "", message: `YAML syntax error${at}: ${firstLine}` };
  });
  if (syntax.length > 0) throw new ExperimentFileError(source, syntax);
  const duplicates = findDuplicateKeys(doc.contents, lineCounter);
  if (duplicates.length > 0) throw new ExperimentFileError(source, duplicates);
  return doc.toJS({ maxAliasCount: 1000 });
}

/** Every repeated key of every mapping, at its own path, with both positions. */
function findDuplicateKeys(root: Node | null, lines: LineCounter): ValidationError[] {
  const out: ValidationError[] = [];
  const where = (node: Node) => {
    const pos = lines.linePos(node.range?.[0] ?? 0);
    return `line ${pos.line}, column ${pos.col}`;
  };
  const visit = (node: unknown, path: (string | number)[]) => {
    if (isMap(node)) {
      const first = new Map<string, Node>();
      for (const pair of node.items) {
        const keyNode = pair.key as Node | null;
        const key = isScalar(keyNode) ? String(keyNode.value) : String(keyNode);
        if (key === "<<") continue; // merge key
        const earlier = first.get(key);
        if (earlier !== undefined && keyNode !== null) {
          out.push({
            path: formatPath([...path, key]),
            message: `duplicate key (${where(keyNode)}; first at ${where(earlier)})`,
          });
        } else if (keyNode !== null) first.set(key, keyNode);
        visit(pair.value, [...path, key]);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, index) => visit(item, [...path, index]));
    }
  };
  visit(root, []);
  return out;
}

function requireMapping(value: unknown, source: string): Record<string, unknown> {
  if (value === null || value === undefined) fail(source, "the file is empty");
  if (!isRecord(value)) {
    const kind = Array.isArray(value) ? "a list" : `${typeof value} ${JSON.stringify(value)}`;
    fail(
      source,
      `expected a mapping at the top level (name:, schedule:, trainer:, ...), got ${kind}`,
    );
  }
  return value;
}

function fail(source: string, message: string): never {
  throw new ExperimentFileError(source, [{ path: "", message }]);
}

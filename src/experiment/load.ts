/**
 * Reading experiment files: YAML (with line:column in syntax errors, duplicate keys rejected
 * with their path) or strict JSON for `.json` files, read by the same YAML reader. The result is the raw parsed mapping; see
 * `validate_experiment.ts` for overrides, matrix expansion and the schema.
 *
 * @module
 */

import { type Document, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import { formatPath, isRecord } from "./_path.ts";
import { ExperimentFileError, type ValidationError } from "./validation_errors.ts";
import {
  bracketDepth,
  MAX_EXPERIMENT_FILE_BYTES,
  MAX_NESTING_DEPTH,
  MAX_YAML_ALIASES,
  valueDepth,
} from "./input_limits.ts";

/** Whether a file name is read as JSON (by extension); everything else is read as YAML. */
function isJsonFileName(name: string): boolean {
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
  if (text.length > MAX_EXPERIMENT_FILE_BYTES) {
    fail(sourceName, `the file is larger than ${MAX_EXPERIMENT_FILE_BYTES} bytes`);
  }
  if (bracketDepth(text) > MAX_NESTING_DEPTH) fail(sourceName, tooDeep());
  let value: unknown;
  try {
    value = isJsonFileName(sourceName) ? parseJson(text, sourceName) : parseYaml(text, sourceName);
  } catch (error) {
    if (error instanceof RangeError) fail(sourceName, tooDeep()); // stack overflow while parsing
    throw error;
  }
  if (valueDepth(value) > MAX_NESTING_DEPTH) fail(sourceName, tooDeep());
  return requireMapping(value, sourceName);
}

function tooDeep(): string {
  return `mappings and lists nest deeper than ${MAX_NESTING_DEPTH} levels`;
}

/**
 * Reads and parses an experiment file (see {@link loadExperimentText}).
 *
 * @throws {ExperimentFileError} when the file cannot be read or parsed.
 */
export async function loadExperimentFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readBounded(path);
  } catch (error) {
    if (error instanceof ExperimentFileError) throw error;
    const reason = error instanceof Deno.errors.NotFound
      ? "file not found"
      : `cannot read the file: ${(error as Error).message}`;
    throw new ExperimentFileError(path, [{ path: "", message: reason }]);
  }
  return loadExperimentText(text, path);
}

/**
 * The text of a regular file of at most {@linkcode MAX_EXPERIMENT_FILE_BYTES}; a folder, device
 * (`/dev/zero`), FIFO or socket is refused before it is opened, and a file that grows while read
 * stops at the limit.
 */
async function readBounded(path: string): Promise<string> {
  const info = await Deno.stat(path);
  if (!info.isFile) {
    fail(
      path,
      info.isDirectory
        ? "is a folder, not a file"
        : "is not a regular file (a device, pipe or socket)",
    );
  }
  if (info.size > MAX_EXPERIMENT_FILE_BYTES) {
    fail(path, `the file is ${info.size} bytes; at most ${MAX_EXPERIMENT_FILE_BYTES} are read`);
  }
  using file = await Deno.open(path, { read: true });
  const buffer = new Uint8Array(MAX_EXPERIMENT_FILE_BYTES + 1);
  let length = 0;
  while (length < buffer.length) {
    const n = await file.read(buffer.subarray(length));
    if (n === null) break;
    length += n;
  }
  if (length > MAX_EXPERIMENT_FILE_BYTES) {
    fail(path, `the file is larger than ${MAX_EXPERIMENT_FILE_BYTES} bytes`);
  }
  return new TextDecoder().decode(buffer.subarray(0, length));
}

/**
 * JSON through the YAML reader (YAML 1.2 is a superset of JSON), so both formats share its
 * positions and its duplicate-key check by path; its JSON schema keeps bare words to JSON's, and
 * `JSON.parse` then refuses what only YAML allows (trailing commas, `#` comments, single quotes).
 */
function parseJson(text: string, source: string): unknown {
  if (text.trim() === "") fail(source, "the file is empty");
  checkedDocument(text, source, "JSON");
  try {
    return JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    const at = /\(line (\d+) column (\d+)\)/.exec(message);
    const what = message.replace(/ (?:in JSON )?at position.*$|, ".*$/s, "");
    fail(source, `JSON syntax error${at ? ` at line ${at[1]}, column ${at[2]}` : ""}: ${what}`);
  }
}

function parseYaml(text: string, source: string): unknown {
  const doc = checkedDocument(text, source, "YAML");
  try {
    return doc.toJS({ maxAliasCount: MAX_YAML_ALIASES });
  } catch (error) {
    if (error instanceof ReferenceError && /alias/i.test(error.message)) {
      fail(source, `YAML aliases expand too much (at most ${MAX_YAML_ALIASES} alias uses)`);
    }
    throw error;
  }
}

/** The parsed document, once it has no syntax error (with line:column) and no duplicate key. */
function checkedDocument(text: string, source: string, format: "YAML" | "JSON"): Document {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, {
    uniqueKeys: false, // duplicates are found below, with their path
    merge: format === "YAML",
    schema: format === "JSON" ? "json" : "core",
    prettyErrors: true,
    lineCounter,
  });
  const syntax = doc.errors.map((error): ValidationError => {
    const firstLine = error.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
    const where = error.linePos?.[0];
    const at = where ? ` at line ${where.line}, column ${where.col}` : "";
    return { path: "", message: `${format} syntax error${at}: ${firstLine}` };
  });
  if (syntax.length > 0) throw new ExperimentFileError(source, syntax);
  const duplicates = findDuplicateKeys(doc.contents, lineCounter);
  if (duplicates.length > 0) throw new ExperimentFileError(source, duplicates);
  return doc;
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

/**
 * A strict JSON (RFC 8259) parser that reports line:column and rejects duplicate keys. V8's
 * `JSON.parse` reports neither a position nor duplicates, and both matter for hand-written files.
 */
import { EXIT_CODES } from "../types/exit_codes.ts";
import { HarnessError } from "../types/harness_error.ts";
import { formatPath } from "./_path.ts";

/** A JSON problem with its 1-based position. */
export interface JsonProblem {
  /** 1-based line. */
  line: number;
  /** 1-based column. */
  column: number;
  /** Dotted path of the duplicate key, when the problem is one. */
  path?: string;
  /** What is wrong. */
  message: string;
}

/** A syntax error at `offset` (an invalid experiment file, should one escape). */
class JsonSyntax extends HarnessError {
  readonly offset: number;
  constructor(offset: number, message: string) {
    super(message, EXIT_CODES.USAGE);
    this.offset = offset;
  }
}

/** Result of {@link parseStrictJson}: the value, or the syntax error; duplicate keys either way. */
export type StrictJsonResult =
  | { ok: true; value: unknown; duplicates: JsonProblem[] }
  | { ok: false; syntax: JsonProblem };

/** Parses `text` as strict JSON, collecting duplicate keys and the first syntax error. */
export function parseStrictJson(text: string): StrictJsonResult {
  const problems: JsonProblem[] = [];
  let i = 0;
  const position = (offset: number) => {
    let line = 1;
    let column = 1;
    for (let k = 0; k < offset && k < text.length; k++) {
      if (text[k] === "\n") {
        line++;
        column = 1;
      } else column++;
    }
    return { line, column };
  };
  const describe = (offset: number) =>
    offset >= text.length ? "end of file" : JSON.stringify(text[offset]);
  const skipSpace = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const expect = (char: string, what: string) => {
    skipSpace();
    if (text[i] !== char) throw new JsonSyntax(i, `expected ${what}, found ${describe(i)}`);
    i++;
  };
  const parseString = (): string => {
    const start = i;
    i++; // opening quote
    let out = "";
    for (;;) {
      if (i >= text.length) throw new JsonSyntax(start, "unterminated string");
      const char = text[i];
      if (char === '"') {
        i++;
        return out;
      }
      if (char === "\\") {
        const escape = text[i + 1];
        const simple: Record<string, string> = {
          '"': '"',
          "\\": "\\",
          "/": "/",
          b: "\b",
          f: "\f",
          n: "\n",
          r: "\r",
          t: "\t",
        };
        if (escape !== undefined && escape in simple) {
          out += simple[escape];
          i += 2;
        } else if (escape === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
          out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
          i += 6;
        } else throw new JsonSyntax(i, "invalid escape in string");
        continue;
      }
      if (char < " ") throw new JsonSyntax(i, "control character in string (use an escape)");
      out += char;
      i++;
    }
  };
  const parseValue = (path: (string | number)[]): unknown => {
    skipSpace();
    const char = text[i];
    if (char === "{") {
      i++;
      const object: Record<string, unknown> = {};
      skipSpace();
      if (text[i] === "}") {
        i++;
        return object;
      }
      for (;;) {
        skipSpace();
        if (text[i] !== '"') {
          throw new JsonSyntax(i, `expected a "quoted" key, found ${describe(i)}`);
        }
        const keyOffset = i;
        const key = parseString();
        expect(":", "':' after the key");
        const value = parseValue([...path, key]);
        if (Object.hasOwn(object, key)) {
          problems.push({
            ...position(keyOffset),
            path: formatPath([...path, key]),
            message: "duplicate key",
          });
        }
        Object.defineProperty(object, key, {
          value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
        skipSpace();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return object;
        }
        throw new JsonSyntax(i, `expected ',' or '}' after a value, found ${describe(i)}`);
      }
    }
    if (char === "[") {
      i++;
      const list: unknown[] = [];
      skipSpace();
      if (text[i] === "]") {
        i++;
        return list;
      }
      for (;;) {
        list.push(parseValue([...path, list.length]));
        skipSpace();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return list;
        }
        throw new JsonSyntax(i, `expected ',' or ']' after a value, found ${describe(i)}`);
      }
    }
    if (char === '"') return parseString();
    const number = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400));
    if (number && number[0] !== "-") {
      i += number[0].length;
      return Number(number[0]);
    }
    for (const [word, value] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return value;
      }
    }
    throw new JsonSyntax(i, `expected a value, found ${describe(i)}`);
  };
  try {
    const value = parseValue([]);
    skipSpace();
    if (i < text.length) throw new JsonSyntax(i, `unexpected ${describe(i)} after the value`);
    return { ok: true, value, duplicates: problems };
  } catch (error) {
    if (!(error instanceof JsonSyntax)) throw error;
    return { ok: false, syntax: { ...position(error.offset), message: error.message } };
  }
}

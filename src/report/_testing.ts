/**
 * A structural validator for the common JUnit XML shape (the subset of the Jenkins/Ant JUnit
 * XSD that CI reporters read): a small strict XML parser plus element/attribute rules and count
 * consistency. Used by the tests instead of a network-fetched schema.
 *
 * @module
 */

/** A parsed XML element. */
export interface XmlElement {
  /** Tag name. */
  name: string;
  /** Attributes (entity-decoded). */
  attrs: Record<string, string>;
  /** Child elements in order. */
  children: XmlElement[];
  /** Concatenated text content (entity-decoded). */
  text: string;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
// deno-lint-ignore no-control-regex
const INVALID_CHAR = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/;

function decode(raw: string, where: string): string {
  if (INVALID_CHAR.test(raw)) throw new Error(`${where}: character not allowed in XML`);
  if (/<|&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/.test(raw)) {
    throw new Error(`${where}: unescaped markup in "${raw.slice(0, 40)}"`);
  }
  return raw.replace(/&(#x[0-9a-fA-F]+|#\d+|\w+);/g, (_, e: string) => {
    if (e.startsWith("#x")) return String.fromCodePoint(parseInt(e.slice(2), 16));
    if (e.startsWith("#")) return String.fromCodePoint(parseInt(e.slice(1), 10));
    return ENTITIES[e];
  });
}

/** Parses a well-formed XML document (no DTD, comments or CDATA needed here); throws otherwise. */
export function parseXml(xml: string): XmlElement {
  let i = 0;
  const prolog = xml.match(/^<\?xml version="1\.0" encoding="UTF-8"\?>\s*/);
  if (!prolog) throw new Error("missing XML declaration");
  i = prolog[0].length;
  const stack: XmlElement[] = [];
  let root: XmlElement | null = null;
  while (i < xml.length) {
    if (xml[i] === "<") {
      if (xml[i + 1] === "/") {
        const end = xml.indexOf(">", i);
        const name = xml.slice(i + 2, end).trim();
        const open = stack.pop();
        if (!open || open.name !== name) throw new Error(`mismatched </${name}> at ${i}`);
        i = end + 1;
        continue;
      }
      const m = xml.slice(i).match(
        /^<([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_][\w.-]*="[^"]*")*)\s*(\/?)>/,
      );
      if (!m) throw new Error(`malformed tag at ${i}: ${xml.slice(i, i + 40)}`);
      const attrs: Record<string, string> = {};
      for (const a of m[2].matchAll(/([A-Za-z_][\w.-]*)="([^"]*)"/g)) {
        if (a[1] in attrs) throw new Error(`duplicate attribute ${a[1]} on <${m[1]}>`);
        attrs[a[1]] = decode(a[2], `<${m[1]} ${a[1]}>`);
      }
      const el: XmlElement = { name: m[1], attrs, children: [], text: "" };
      if (stack.length > 0) stack.at(-1)!.children.push(el);
      else if (root) throw new Error("more than one root element");
      else root = el;
      if (!m[3]) stack.push(el);
      i += m[0].length;
    } else {
      const next = xml.indexOf("<", i);
      const raw = xml.slice(i, next < 0 ? xml.length : next);
      if (stack.length === 0) {
        if (raw.trim() !== "") throw new Error("text outside the root element");
      } else stack.at(-1)!.text += decode(raw, `<${stack.at(-1)!.name}> text`);
      i = next < 0 ? xml.length : next;
    }
  }
  if (stack.length > 0) throw new Error(`unclosed <${stack.at(-1)!.name}>`);
  if (!root) throw new Error("no root element");
  return root;
}

interface Rule {
  required: string[];
  optional: string[];
  children: string[];
}

const COUNT_ATTRS = ["tests", "failures", "errors", "skipped", "disabled", "assertions"];
const RULES: Record<string, Rule> = {
  testsuites: { required: [], optional: ["name", "time", ...COUNT_ATTRS], children: ["testsuite"] },
  testsuite: {
    required: ["name", "tests"],
    optional: [
      "failures",
      "errors",
      "skipped",
      "disabled",
      "time",
      "timestamp",
      "hostname",
      "id",
      "package",
      "file",
    ],
    children: ["properties", "testcase", "system-out", "system-err"],
  },
  properties: { required: [], optional: [], children: ["property"] },
  property: { required: ["name", "value"], optional: [], children: [] },
  testcase: {
    required: ["name"],
    optional: ["classname", "time", "assertions", "status", "file", "line"],
    // Per-test properties, first child: read by Jenkins' JUnit plugin and GitLab, written by
    // pytest's record_property (the Ant schema lists properties on suites only).
    children: ["properties", "skipped", "error", "failure", "system-out", "system-err"],
  },
  failure: { required: [], optional: ["message", "type"], children: [] },
  error: { required: [], optional: ["message", "type"], children: [] },
  skipped: { required: [], optional: ["message"], children: [] },
  "system-out": { required: [], optional: [], children: [] },
  "system-err": { required: [], optional: [], children: [] },
};

function checkElement(el: XmlElement, path: string, problems: string[]): void {
  const rule = RULES[el.name];
  if (!rule) {
    problems.push(`${path}: unknown element <${el.name}>`);
    return;
  }
  for (const r of rule.required) if (!(r in el.attrs)) problems.push(`${path}: missing @${r}`);
  for (const a of Object.keys(el.attrs)) {
    if (!rule.required.includes(a) && !rule.optional.includes(a)) {
      problems.push(`${path}: unknown @${a}`);
    }
    const v = el.attrs[a];
    if (COUNT_ATTRS.includes(a) && !/^\d+$/.test(v)) {
      problems.push(`${path}: @${a}="${v}" is not a count`);
    }
    if (a === "time" && !/^\d+(\.\d+)?$/.test(v)) {
      problems.push(`${path}: @time="${v}" is not a decimal`);
    }
    if (a === "timestamp" && !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/.test(v)) {
      problems.push(`${path}: bad @timestamp`);
    }
  }
  for (const child of el.children) {
    if (!rule.children.includes(child.name)) {
      problems.push(`${path}: <${child.name}> not allowed in <${el.name}>`);
    }
  }
  if (rule.children.length === 0 && el.children.length > 0) {
    problems.push(`${path}: must not have children`);
  }
  if (el.name === "testsuite" || el.name === "testcase") {
    if (el.children.findIndex((c) => c.name === "properties") > 0) {
      problems.push(`${path}: <properties> must come first`);
    }
    if (el.children.filter((c) => c.name === "properties").length > 1) {
      problems.push(`${path}: several <properties>`);
    }
  }
  if (el.name === "testcase") {
    const outcomes = el.children.filter((c) =>
      c.name === "skipped" || c.name === "error" || c.name === "failure"
    );
    if (outcomes.length > 1) problems.push(`${path}: more than one outcome`);
  }
  el.children.forEach((c, k) => checkElement(c, `${path}/${c.name}[${k}]`, problems));
}

/** Counts of a suite computed from its test cases. */
export interface SuiteCounts {
  /** Suite name. */
  name: string;
  /** Test cases. */
  tests: number;
  /** Cases with `<failure>`. */
  failures: number;
  /** Cases with `<error>`. */
  errors: number;
  /** Cases with `<skipped>`. */
  skipped: number;
}

/**
 * Validates `xml` against the JUnit shape; returns the problems found (empty when valid) and
 * the parsed tree.
 */
export function validateJunit(
  xml: string,
): { problems: string[]; root: XmlElement | null; suites: SuiteCounts[] } {
  let root: XmlElement;
  try {
    root = parseXml(xml);
  } catch (error) {
    return { problems: [`not well-formed: ${(error as Error).message}`], root: null, suites: [] };
  }
  const problems: string[] = [];
  if (root.name !== "testsuites") problems.push(`root is <${root.name}>, expected <testsuites>`);
  checkElement(root, root.name, problems);
  const suites: SuiteCounts[] = [];
  const has = (tc: XmlElement, name: string) => tc.children.some((c) => c.name === name);
  for (const suite of root.children.filter((c) => c.name === "testsuite")) {
    const cases = suite.children.filter((c) => c.name === "testcase");
    const counts: SuiteCounts = {
      name: suite.attrs.name,
      tests: cases.length,
      failures: cases.filter((c) => has(c, "failure")).length,
      errors: cases.filter((c) => has(c, "error")).length,
      skipped: cases.filter((c) => has(c, "skipped")).length,
    };
    suites.push(counts);
    for (const key of ["tests", "failures", "errors", "skipped"] as const) {
      if (key in suite.attrs && Number(suite.attrs[key]) !== counts[key]) {
        problems.push(
          `testsuite ${counts.name}: @${key}=${suite.attrs[key]} but ${counts[key]} counted`,
        );
      }
    }
  }
  for (const key of ["tests", "failures", "errors", "skipped"] as const) {
    const total = suites.reduce((n, s) => n + s[key], 0);
    if (key in root.attrs && Number(root.attrs[key]) !== total) {
      problems.push(`testsuites: @${key}=${root.attrs[key]} but suites sum to ${total}`);
    }
  }
  return { problems, root, suites };
}

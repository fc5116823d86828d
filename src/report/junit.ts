/**
 * `junit.xml`: the run as JUnit results for CI dashboards (Jenkins, GitHub test reporters). One
 * `<testsuite>` per experiment; one `<testcase>` per comparison, state check, plan check and
 * phase, named the same in every run (cache state, lane and results are `<properties>` of the
 * test case, so per-test history in Jenkins or GitLab survives a cached rerun). A FAIL is a `<failure>` carrying the first divergent step and both values, an ERROR is
 * an `<error>` (with the log tail for phases), an ABSTAIN is `<skipped>`.
 *
 * @module
 */

import type { RunSummary } from "../types/mod.ts";
import { comparisonUlp, comparisonUlpText, exact } from "../format/mod.ts";
import {
  blamedPhases,
  componentList,
  loadedSaveText,
  stateCheckName,
  tensorList,
} from "../parity/mod.ts";
import { plannerText, secondOpinionText, stripAnsi } from "./_format.ts";
import { cardText } from "./_card.ts";

/** What the JUnit writer needs of a run. */
export interface JunitRun {
  /** The run summary. */
  summary: RunSummary;
  /** Log tail of a phase that did not end ok (defaults to the summary's `log_tail`). */
  logTail?: (phase: string) => string;
}

type Outcome =
  | { kind: "pass" }
  | { kind: "failure" | "error"; type: string; message: string; body: string }
  | { kind: "skipped"; message: string };

interface Case {
  classname: string;
  /** Stable across runs: never carries cache state or a result. */
  name: string;
  time: number;
  outcome: Outcome;
  /** Per-test facts (JUnit 5 / Jenkins / GitLab read `<properties>` inside `<testcase>`). */
  properties: [string, string][];
}

// XML 1.0 allows tab, LF, CR and everything from U+0020 except U+FFFE/U+FFFF and lone surrogates.
const INVALID_XML =
  // deno-lint-ignore no-control-regex
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function visible(ch: string): string {
  return `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/**
 * Escapes text for XML element content: markup characters become entities and characters XML
 * cannot carry at all (control characters, lone surrogates) become visible `\uXXXX` text.
 */
export function xmlText(text: string): string {
  return text.replace(INVALID_XML, visible).replace(/&/g, "&amp;").replace(/</g, "&lt;")
    .replace(/>/g, "&gt;");
}

/** Escapes text for a double-quoted XML attribute (line breaks and tabs survive as references). */
export function xmlAttr(text: string): string {
  return xmlText(text).replace(/"/g, "&quot;").replace(/'/g, "&apos;")
    .replace(/\n/g, "&#10;").replace(/\r/g, "&#13;").replace(/\t/g, "&#9;");
}

function secondsAttr(value: number | null | undefined): string {
  return Number.isFinite(value) && (value as number) >= 0 ? (value as number).toFixed(3) : "0.000";
}

/** A property value: the formatted number, or empty (the property is then left out). */
function known(value: number | null, format: (v: number) => string): string {
  return value === null ? "" : format(value);
}

function casesOf(run: JunitRun): Case[] {
  const s = run.summary;
  return [
    ...s.comparisons.map((c) => _comparisonCase(s, c)),
    ...s.state_checks.map((st) => _stateCase(s.experiment, st)),
    ...s.plan_sync.flatMap((p) => _planCases(s.experiment, p)),
    ...s.phases.map((ph) => _phaseCase(run, ph)),
  ];
}

type _Comparison = RunSummary["comparisons"][number];

/** A comparison's test case: named by its comparison (and metric), never by its lane. */
function _comparisonCase(s: RunSummary, c: _Comparison): Case {
  // The lane is a property: declaring another topology must not rename the test.
  const name = c.metric === "loss" ? c.name : `${c.name} (${c.metric})`;
  const differing = s.state_checks.find((st) => st.phase === c.b)?.differing ?? [];
  return {
    classname: `${s.experiment}.comparisons`,
    name,
    time: 0,
    outcome: _comparisonOutcome(c),
    properties: [
      ["lane", c.lane],
      ["verdict", c.verdict],
      ["first_divergent_step", known(c.first_divergent_step, exact)],
      ["max_abs", known(c.max_abs, exact)],
      // Numbers, so a CI reporter can chart or threshold them; the unit is its own property.
      ["max_ulp", known(comparisonUlp(c)?.value ?? null, exact)],
      ["max_ulp_unit", comparisonUlp(c)?.unit ?? ""],
      ["culprit", blamedPhases(c, s).join(", ")],
      ["state_components", differing.join(", ")],
      // What a PASS is worth, when calibration resumes measured it (docs/parity.md, "Sensitivity").
      ...(c.sensitivity
        ? [
          ["sensitivity_lr_error", known(c.sensitivity.detects, exact)],
          ["sensitivity", c.sensitivity.statement],
        ] as [string, string][]
        : []),
    ],
  };
}

/** A FAIL carries the first divergent step and both values; ERROR and ABSTAIN their reason. */
function _comparisonOutcome(c: _Comparison): Outcome {
  if (c.verdict === "FAIL") {
    const where = c.first_step === null ? "" : ` over steps ${c.first_step}-${c.last_step}`;
    const d = c.divergence ??
      (c.first_divergent_step === null ? null : { step: c.first_divergent_step, a: null, b: null });
    const message = d
      ? `first divergent step ${d.step}: ${c.a}=${exact(d.a)} ${c.b}=${exact(d.b)}`
      : (c.reason ?? `${c.name} failed`);
    const body = [
      `${c.name}: ${c.metric} of ${c.b} vs ${c.a}, ${c.lane} lane${where}`,
      c.lane_reason ? `lane: ${c.lane_reason}` : "",
      d ? `first divergent step: ${d.step}` : "first divergent step: none recorded",
      d ? `${c.a} (a) = ${exact(d.a)}` : "",
      d ? `${c.b} (b) = ${exact(d.b)}` : "",
      `last matching step: ${exact(c.last_matching_step)}`,
      `compared: ${c.compared}, failures: ${exact(c.failures)}`,
      `max abs: ${exact(c.max_abs)}, max rel: ${exact(c.max_rel)}, max ULP: ${
        comparisonUlpText(c)
      }`,
      c.reason ?? "",
    ].filter((line) => line !== "").join("\n");
    return { kind: "failure", type: "ParityFailure", message, body };
  }
  if (c.verdict === "ERROR") {
    const message = c.reason ?? `${c.name} could not be judged`;
    return { kind: "error", type: "ParityError", message, body: message };
  }
  if (c.verdict === "ABSTAIN") {
    return {
      kind: "skipped",
      message: c.reason ?? "abstained: noise floor too high for an exact verdict",
    };
  }
  return { kind: "pass" };
}

/** A state check's test case. */
function _stateCase(exp: string, st: RunSummary["state_checks"][number]): Case {
  let outcome: Outcome = { kind: "pass" };
  if (!st.available || st.verdict === "N/A") {
    outcome = { kind: "skipped", message: "no state digests available" };
  } else if (st.verdict === "FAIL") {
    const tensors = tensorList([st]);
    const named = componentList(st.differing, st.framework);
    const notInFiles = st.not_in_files ?? [];
    const loaded = loadedSaveText(st);
    const message = st.check === "perturb"
      ? `the save changed the state the baseline trains on: ${named}`
      : st.check !== "save"
      ? `restored state differs: ${named}${loaded ? `; ${loaded}` : ""}`
      : notInFiles.length > 0
      ? `not in the checkpoint files: ${componentList(notInFiles, st.framework)}`
      : `saved state differs from the baseline's or the files' at the save step: ${named}`;
    outcome = {
      kind: "failure",
      type: "StateMismatch",
      message,
      body: [
        message,
        ...(tensors ? [`tensors: ${tensors}`] : []),
        `compared: ${(st.compared ?? []).join(", ")}`,
      ].join("\n"),
    };
  } else if (st.verdict === "ERROR") {
    outcome = {
      kind: "error",
      type: "StateError",
      message: "state check could not be made",
      body: "",
    };
  } else if (st.verdict === "ABSTAIN") {
    outcome = { kind: "skipped", message: "state check abstained" };
  }
  return {
    classname: `${exp}.state`,
    name: stateCheckName(st),
    time: 0,
    outcome,
    properties: [
      ["verdict", st.verdict],
      ["differing", st.differing.join(", ")],
      ...(st.differing_tensors
        ? [
          ["differing_tensors", st.differing_tensors.join(", ")] as [string, string],
          ["differing_tensors_total", String(st.differing_tensors_total)] as [string, string],
        ]
        : []),
      ...(st.not_in_files
        ? [["not_in_files", st.not_in_files.join(", ")] as [string, string]]
        : []),
      ["compared", (st.compared ?? []).join(", ")],
    ],
  };
}

/** A plan's verification case, and its execution case when it was executed. */
function _planCases(exp: string, p: RunSummary["plan_sync"][number]): Case[] {
  const outcome: Outcome = p.verified ? { kind: "pass" } : {
    kind: "failure",
    type: "PlanRejected",
    message: `plan rejected: ${p.error ?? "verification failed"}`,
    body: `policy ${p.policy} (phase ${p.phase}): ${p.error ?? "verification failed"}`,
  };
  const cases: Case[] = [{
    classname: `${exp}.plan`,
    name: p.policy,
    time: 0,
    outcome,
    properties: [
      ["verified", String(p.verified)],
      ["phase", p.phase],
      ["planner", plannerText(p.planner)],
      ["second_opinion", secondOpinionText(p.second_opinion)],
    ],
  }];
  const ex = p.execution;
  if (!ex) return cases;
  const first = ex.mismatches[0];
  cases.push({
    classname: `${exp}.plan_execution`,
    name: p.policy,
    time: 0,
    outcome: ex.verdict === "PASS" ? { kind: "pass" } : {
      kind: ex.verdict === "FAIL" ? "failure" : "error",
      type: ex.verdict === "FAIL" ? "PlanExecutionMismatch" : "PlanExecutionError",
      message: ex.reason,
      body: ex.mismatches.map((m) =>
        `${m.parameter} · expert ${m.expert} · ${m.kind} · process ${m.process} · ` +
        `region ${m.region}: ${m.detail}`
      ).join("\n") || ex.reason,
    },
    properties: [
      ["verdict", ex.verdict],
      ["phase", ex.phase],
      ["against", ex.against ?? ""],
      ["compared", String(ex.compared)],
      ["mismatches", String(ex.mismatch_count)],
      ["first_parameter", first?.parameter ?? ""],
    ],
  });
  return cases;
}

/** A phase's test case: an error with the log tail when it failed or timed out. */
function _phaseCase(run: JunitRun, ph: RunSummary["phases"][number]): Case {
  let outcome: Outcome = { kind: "pass" };
  if (ph.status === "failed" || ph.status === "timeout") {
    const tail = run.logTail?.(ph.name) || stripAnsi(ph.log_tail ?? "");
    const message = ph.message ??
      (ph.status === "timeout" ? "timed out" : `exited with code ${ph.exit_code ?? "unknown"}`);
    outcome = {
      kind: "error",
      type: ph.status === "timeout" ? "PhaseTimeout" : "PhaseFailed",
      message: `${ph.name}: ${message}`,
      body: tail === "" ? "(no log output)" : tail,
    };
  } else if (ph.status === "skipped") {
    outcome = { kind: "skipped", message: ph.message ?? "phase skipped" };
  }
  return {
    classname: `${run.summary.experiment}.phases`,
    name: ph.name,
    time: ph.wall_s,
    outcome,
    properties: [
      ["role", ph.role],
      ["status", ph.status],
      ["cached", String(ph.cached)],
      ...(ph.source_run ? [["source_run", ph.source_run] as [string, string]] : []),
    ],
  };
}

function caseXml(c: Case): string {
  const open = `    <testcase classname="${xmlAttr(c.classname)}" name="${xmlAttr(c.name)}" time="${
    secondsAttr(c.time)
  }">`;
  const props = c.properties.filter(([, v]) => v !== "");
  const inner: string[] = [];
  if (props.length > 0) {
    inner.push(
      "      <properties>",
      ...props.map(([k, v]) => `        <property name="${xmlAttr(k)}" value="${xmlAttr(v)}"/>`),
      "      </properties>",
    );
  }
  const o = c.outcome;
  if (o.kind === "skipped") inner.push(`      <skipped message="${xmlAttr(o.message)}"/>`);
  if (o.kind === "failure" || o.kind === "error") {
    inner.push(
      `      <${o.kind} message="${xmlAttr(o.message)}" type="${xmlAttr(o.type)}">${
        xmlText(o.body)
      }</${o.kind}>`,
    );
  }
  return inner.length === 0
    ? `${open.slice(0, -1)}/>`
    : `${open}\n${inner.join("\n")}\n    </testcase>`;
}

/** JUnit's timestamp form: `2026-11-29T10:15:00` (local-less ISO without zone). */
function timestamp(iso: string | undefined): string | null {
  if (!iso) return null;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? null : d.toISOString().slice(0, 19);
}

/**
 * Renders `junit.xml` for one or more runs: a `<testsuite>` per experiment inside
 * `<testsuites>`, with counts that always add up.
 *
 * @example
 * ```ts
 * import { renderJunit } from "./junit.ts";
 * // const xml = renderJunit([{ summary }]);
 * ```
 */
export function renderJunit(runs: JunitRun[], name = "parity"): string {
  const totals = { tests: 0, failures: 0, errors: 0, skipped: 0, time: 0 };
  const suites: string[] = [];
  for (const run of runs) {
    const s = run.summary;
    const cases = casesOf(run);
    const n = {
      tests: cases.length,
      failures: cases.filter((c) => c.outcome.kind === "failure").length,
      errors: cases.filter((c) => c.outcome.kind === "error").length,
      skipped: cases.filter((c) => c.outcome.kind === "skipped").length,
    };
    totals.tests += n.tests;
    totals.failures += n.failures;
    totals.errors += n.errors;
    totals.skipped += n.skipped;
    totals.time += s.wall_s ?? 0;
    const ts = timestamp(s.started_at);
    const card = cardText(s);
    const props = [
      ["run_id", s.run_id],
      ["verdict", s.verdict],
      ["exit_code", String(s.exit_code)],
      ["git_commit", s.git_commit ?? ""],
      ["harness_version", s.harness_version ?? ""],
      ...(s.findings && s.findings.length > 0
        ? [["root_cause", `${s.findings[0].code}: ${s.findings[0].title}`]]
        : []),
    ].map(([k, v]) => `      <property name="${xmlAttr(k)}" value="${xmlAttr(v)}"/>`);
    suites.push(
      `  <testsuite name="${xmlAttr(s.experiment)}" tests="${n.tests}" failures="${n.failures}" ` +
        `errors="${n.errors}" skipped="${n.skipped}" time="${secondsAttr(s.wall_s)}"` +
        (ts ? ` timestamp="${ts}"` : "") + `>\n` +
        `    <properties>\n${props.join("\n")}\n    </properties>\n` +
        cases.map(caseXml).join("\n") + (cases.length ? "\n" : "") +
        // The root-cause card, so a CI test view shows what happened and what to try.
        (card ? `    <system-out>${xmlText(card)}</system-out>\n` : "") + `  </testsuite>`,
    );
  }
  return `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<testsuites name="${xmlAttr(name)}" tests="${totals.tests}" failures="${totals.failures}" ` +
    `errors="${totals.errors}" skipped="${totals.skipped}" time="${secondsAttr(totals.time)}">\n` +
    suites.join("\n") + (suites.length ? "\n" : "") + `</testsuites>\n`;
}

// The report's tables as plain data, so Markdown and HTML show exactly the same content.

import type {
  ComparisonSummary,
  NoiseRtolDerivation,
  PhaseSummary,
  PlanSyncSummary,
  StateCheckSummary,
  Verdict,
} from "../types/mod.ts";
import {
  componentList,
  type Culprit,
  culprits,
  loadedSaveText,
  stateCheckName,
  tensorList,
  ulpDistanceIn,
} from "../parity/mod.ts";
import {
  bytes,
  comparisonUlp,
  comparisonUlpText,
  count,
  duration,
  exact,
  percent,
  stat,
} from "../format/mod.ts";
import { plannerText, secondOpinionText, verdictLabel } from "./_format.ts";
import type { LoadedRun } from "./load_run.ts";
import type { PreviousRun } from "./history.ts";

/** A table cell: plain text, optionally a link (relative path). */
export interface Cell {
  /** Displayed text. */
  text: string;
  /** Link target. */
  href?: string;
  /** Emphasise (the divergent step's row). */
  strong?: boolean;
  /** Extra links shown after the first (e.g. stdout next to stderr). */
  more?: { text: string; href: string }[];
  /**
   * A verdict or status: Markdown shows `text` (emoji and word), HTML a coloured badge with
   * `label` followed by `suffix`, which needs no emoji font.
   */
  badge?: { tone: Verdict | "N/A"; label: string; suffix: string };
}

/** One report table. */
export interface Table {
  /** Stable id (HTML anchors, tests). */
  id: string;
  /** Section heading. */
  title: string;
  /** Column headers. */
  headers: string[];
  /** Right-aligned columns (numbers). */
  numeric: boolean[];
  /** Rows of cells. */
  rows: Cell[][];
  /** Shown instead of an empty table. */
  empty: string;
}

const c = (text: string, href?: string): Cell => href ? { text, href } : { text };

/** A verdict cell (`❌ FAIL` in Markdown, a red `FAIL` badge in HTML). */
export function verdictCell(verdict: Verdict | "N/A", suffix = ""): Cell {
  return { text: verdictLabel(verdict) + suffix, badge: { tone: verdict, label: verdict, suffix } };
}

/**
 * How a comparison compares with the experiment's previous run (`history.csv`): `was PASS` when
 * the verdict changed, `max abs was …` when only the size changed, `unchanged`, or
 * `new comparison`.
 */
function versusPrevious(previous: PreviousRun, cmp: ComparisonSummary): string {
  const before = previous.comparisons.get(cmp.name);
  if (before === undefined) return "new comparison";
  if (before.comparison_verdict !== cmp.verdict) return `was ${before.comparison_verdict || "—"}`;
  const abs = before.max_abs === "" ? null : Number(before.max_abs);
  return abs === cmp.max_abs ? "unchanged" : `max abs was ${stat(abs)}`;
}

/** The a/b values at the first divergent step of a comparison (summary first, else the data). */
export function divergenceValues(
  run: LoadedRun,
  comparison: ComparisonSummary,
): { step: number; a: number | null; b: number | null } | null {
  if (comparison.divergence) return comparison.divergence;
  const step = comparison.first_divergent_step;
  if (step === null) return null;
  const at = (phase: string) => {
    const s = run.series(phase, comparison.metric);
    const i = s.steps.indexOf(step);
    return i < 0 ? null : s.values[i];
  };
  return { step, a: at(comparison.a), b: at(comparison.b) };
}

/** Which comparisons {@link comparisonsTable} lists. */
export type ComparisonRows = "all" | "differing";

/**
 * The comparisons table: every comparison (HTML), or only those that are not PASS (the PR
 * comment, which counts the PASS rows in one line instead). The "vs last run" column appears
 * when the experiment ran before.
 */
export function comparisonsTable(run: LoadedRun, which: ComparisonRows = "all"): Table {
  const shown = run.summary.comparisons.filter((cmp) => which === "all" || cmp.verdict !== "PASS");
  const previous = run.previous;
  const rows = shown.map((cmp) => {
    const d = divergenceValues(run, cmp);
    const window = cmp.first_step === null ? "—" : `${cmp.first_step}–${cmp.last_step ?? "?"}`;
    return [
      c(cmp.name),
      verdictCell(cmp.verdict),
      c(d ? String(d.step) : "—"),
      c(d ? exact(d.a) : "—"),
      c(d ? exact(d.b) : "—"),
      c(stat(cmp.max_abs)),
      c(comparisonUlpText(cmp)),
      c(`${cmp.lane}${cmp.metric === "loss" ? "" : ` (${cmp.metric})`}`),
      c(window),
      ...(previous ? [c(versusPrevious(previous, cmp))] : []),
      c(cmp.lane_reason ?? "—"),
    ];
  });
  return {
    id: "comparisons",
    title: which === "all" ? "Comparisons" : "What differs",
    headers: [
      "comparison",
      "verdict",
      "first divergent step",
      "a there",
      "b there",
      "max abs",
      "max ULP",
      "lane",
      "window",
      ...(previous ? ["vs last run"] : []),
      "why this lane",
    ],
    numeric: [
      false,
      false,
      true,
      true,
      true,
      true,
      true,
      false,
      false,
      ...(previous ? [false] : []),
      false,
    ],
    rows,
    empty: which === "all" ? "No comparisons were made." : "Every comparison passed.",
  };
}

/**
 * The restored-state checks table: every check, or only those with digests that are not PASS
 * (the PR comment, which names the others in a line).
 */
export function stateTable(run: LoadedRun, which: ComparisonRows = "all"): Table {
  const checks = run.summary.state_checks.filter((s) =>
    which === "all" || (s.available && s.verdict !== "PASS")
  );
  // The tensors column appears only when some check names tensors (per-tensor digests).
  const tensors = checks.some((s) => (s.differing_tensors ?? []).length > 0);
  return {
    id: "state",
    title: "State checks",
    headers: [
      "phase",
      "verdict",
      "differing components",
      ...(tensors ? ["differing tensors"] : []),
      "compared",
    ],
    numeric: [false, false, false, ...(tensors ? [false] : []), false],
    rows: checks.map((s) => [
      c(stateCheckName(s)),
      s.available ? verdictCell(s.verdict) : verdictCell("N/A", " (no digests)"),
      c(s.differing.length > 0 ? differingText(s) : "—"),
      ...(tensors ? [c(tensorList([s]) || "—")] : []),
      c(s.compared && s.compared.length > 0 ? s.compared.join(", ") : "—"),
    ]),
    empty: "No state checks (the trainer emitted no digests or no resume ran).",
  };
}

/** A check's differing components in the framework's words, and which the files lack. */
function differingText(s: StateCheckSummary): string {
  const text = componentList(s.differing, s.framework);
  const missing = s.not_in_files ?? [];
  const loaded = loadedSaveText(s);
  const more = loaded ? `; ${loaded}` : "";
  return missing.length > 0
    ? `${text}; not in the checkpoint files: ${missing.join(", ")}${more}`
    : `${text}${more}`;
}

/**
 * The plan-sync table. The planner, second-opinion and plan-execute columns appear only when some
 * plan has them (a foreign planner's plans, `plan_sync.execute`).
 */
export function planTable(run: LoadedRun): Table {
  const plans = run.summary.plan_sync;
  const optional: { header: string; cell: (p: PlanSyncSummary) => Cell }[] = [
    {
      header: "planner",
      cell: (p) => c(plannerText(p.planner) || "—"),
    },
    {
      header: "second opinion",
      cell: (p) => c(secondOpinionText(p.second_opinion) || "—"),
    },
    {
      header: "executed on the checkpoint's bytes",
      cell: (p) =>
        p.execution ? verdictCell(p.execution.verdict, `: ${p.execution.reason}`) : c("—"),
    },
  ];
  const present = [
    plans.some((p) => p.planner),
    plans.some((p) => p.second_opinion),
    plans.some((p) => p.execution),
  ];
  const extra = optional.filter((_, i) => present[i]);
  return {
    id: "plan",
    title: "Plan sync",
    headers: [
      "policy",
      "verified",
      "segments",
      "moved bytes",
      "local bytes",
      "max process load",
      "mean process load",
      "reshard that ran",
      ...extra.map((x) => x.header),
    ],
    numeric: [false, false, true, true, true, true, true, false, ...extra.map(() => false)],
    rows: plans.map((p) => [
      c(p.policy),
      p.verified ? verdictCell("PASS") : verdictCell("FAIL", p.error ? `: ${p.error}` : ""),
      c(count(p.segments)),
      c(bytes(p.moved_bytes)),
      c(bytes(p.local_bytes)),
      c(bytes(p.max_process_bytes)),
      c(bytes(p.mean_process_bytes)),
      c(reshardVerdict(run, p.reshard_resumes ?? [])),
      ...extra.map((x) => x.cell(p)),
    ]),
    empty: "No plan-sync policies in this experiment.",
  };
}

/** The resumes on a plan's target topology with their verdicts against the baseline, or "—". */
function reshardVerdict(run: LoadedRun, phases: string[]): string {
  const parts = phases.map((phase) => {
    const found = run.summary.comparisons.find((x) => x.b === phase && x.a === "baseline");
    return found ? `${phase} (${found.lane} ${found.verdict})` : phase;
  });
  return parts.length > 0 ? parts.join(", ") : "—";
}

/** How a derived rtol was derived, in words ("—" when none was). */
function derivationText(d: NoiseRtolDerivation | undefined): string {
  if (d === undefined) return "—";
  const rule = `max(max rel × ${d.multiplier}, ${stat(d.floor)})`;
  return d.source === "tolerance-auto" ? `${rule}, tolerance: auto` : rule;
}

/**
 * What each calibrated comparison would have caught (docs/parity.md, "Sensitivity"): one row per
 * comparison with calibration resumes, each calibration as `error verdict@step`.
 */
export function sensitivityTable(run: LoadedRun): Table {
  const rows = run.summary.comparisons.flatMap((cmp) => {
    const s = cmp.sensitivity;
    if (s === undefined) return [];
    const tried = s.tried.map((t) =>
      `${percent(t.lr_error)} ${t.verdict}${
        t.first_divergent_step === null ? "" : ` at ${t.first_divergent_step}`
      }${t.test ? ` (${t.test})` : ""}${t.applied === false ? " (not applied)" : ""}`
    ).join("; ");
    return [[
      c(cmp.name),
      verdictCell(cmp.verdict),
      c(cmp.lane),
      c(s.detects === null ? "none tried" : `≥ ${percent(s.detects)}`),
      c(tried),
      c(s.statement),
    ]];
  });
  return {
    id: "sensitivity",
    title: "What a PASS is worth",
    headers: ["comparison", "verdict", "lane", "LR error caught", "calibrations", "meaning"],
    numeric: [false, false, false, false, false, false],
    rows,
    empty: "No resume has calibrations (resume.<name>.sensitivity).",
  };
}

/** The noise-floor table (one row). */
export function noiseTable(run: LoadedRun): Table {
  const n = run.summary.noise_floor;
  const rows = n && n.repeats > 0
    ? [[
      c(String(n.repeats)),
      c(n.identical ? "yes: bit-identical" : "no"),
      c(stat(n.max_rel_deviation)),
      c(stat(n.derived_rtol)),
      c(derivationText(n.derivation)),
      c(n.spread && n.spread.length > 0 ? String(n.spread.length) : "0"),
    ]]
    : [];
  return {
    id: "noise",
    title: "Noise floor",
    headers: [
      "repeats",
      "identical",
      "max rel deviation",
      "derived rtol",
      "derived as",
      "steps that differ",
    ],
    numeric: [true, false, true, true, false, true],
    rows,
    empty: "No repeated baselines were run, so nondeterminism was not measured.",
  };
}

/** The diagnostics table. */
export function diagnosticsTable(run: LoadedRun): Table {
  const icon = { error: "🛑", warning: "⚠️", info: "ℹ️" } as const;
  const tone = { error: "ERROR", warning: "ABSTAIN", info: "N/A" } as const;
  return {
    id: "diagnostics",
    title: "Diagnostics",
    headers: ["level", "code", "phase", "message"],
    numeric: [false, false, false, false],
    rows: (run.summary.diagnostics ?? []).map((d) => [
      {
        text: `${icon[d.level] ?? ""} ${d.level}`,
        badge: { tone: tone[d.level] ?? "N/A", label: d.level, suffix: "" },
      },
      c(d.code),
      c(d.phase ?? "—"),
      c(d.message),
    ]),
    empty: "No diagnostics.",
  };
}

/** Status of a phase with its emoji (failed and timeout phases are ERROR evidence). */
function phaseStatus(p: PhaseSummary): string {
  const icon = { ok: "✅", failed: "💥", timeout: "⏱️", skipped: "⏭️" }[p.status] ?? "";
  return `${icon} ${p.status}`;
}

const PHASE_TONE: Record<PhaseSummary["status"], Verdict | "N/A"> = {
  ok: "PASS",
  failed: "ERROR",
  timeout: "ERROR",
  skipped: "N/A",
};

/** `; retried 1× (attempt 1: exited with code 1, log matched NCCL)` for flaky-infrastructure retries. */
function retriesNote(p: PhaseSummary): string {
  if (!p.retries || p.retries.length === 0) return "";
  const each = p.retries.map((r) =>
    `attempt ${r.attempt}: ${r.message}, log matched \`${r.matched}\``
  );
  return `; retried ${p.retries.length}× (${each.join("; ")})`;
}

/** The phases table with links to their logs (relative to the run folder). */
export function phasesTable(run: LoadedRun, existing: Set<string>): Table {
  return {
    id: "phases",
    title: "Phases",
    headers: ["phase", "role", "status", "wall time", "cached", "exit code", "logs"],
    numeric: [false, false, false, true, false, true, false],
    rows: run.summary.phases.map((p) => {
      const stderr = `phases/${p.name}/stderr.log`;
      const stdout = `phases/${p.name}/stdout.log`;
      const logs: Cell = existing.has(stderr)
        ? {
          text: "stderr",
          href: stderr,
          more: existing.has(stdout) ? [{ text: "stdout", href: stdout }] : [],
        }
        : existing.has(stdout)
        ? { text: "stdout", href: stdout }
        : { text: "—" };
      return [
        c(p.name),
        c(p.role),
        {
          text: phaseStatus(p) + (p.message ? `: ${p.message}` : "") + retriesNote(p),
          badge: {
            tone: PHASE_TONE[p.status] ?? "N/A",
            label: p.status,
            suffix: (p.message ? `: ${p.message}` : "") + retriesNote(p),
          },
        },
        c(duration(p.wall_s)),
        c(p.cached ? `yes${p.source_run ? ` (${p.source_run})` : ""}` : "no"),
        c(p.exit_code === null ? "—" : String(p.exit_code)),
        logs,
      ];
    }),
    empty: "No phases ran.",
  };
}

/** One row of a divergence detail table. */
export interface DetailRow {
  /** Step. */
  step: number;
  /** Value of `a` (null when absent). */
  a: number | null;
  /** Value of `b` (null when absent). */
  b: number | null;
  /** `b − a` when both exist. */
  diff: number | null;
  /** Float64 ULP distance when both exist. */
  ulp: number | null;
  /** This is the first divergent step. */
  divergent: boolean;
}

/**
 * The per-step values around the first divergence (`radius` steps each side, inside the compared
 * window), read from the stored series (`losses.csv` for `loss`).
 */
function divergenceDetail(run: LoadedRun, cmp: ComparisonSummary, radius = 5): DetailRow[] {
  const step = cmp.first_divergent_step;
  if (step === null) return [];
  const sa = run.series(cmp.a, cmp.metric);
  const sb = run.series(cmp.b, cmp.metric);
  // The precision the parity engine counted this comparison's ULPs in.
  const unit = comparisonUlp(cmp)?.unit ?? "f64";
  const steps = new Set<number>();
  // Only the compared window: steps before the resume have no b value and would be rows of "—".
  const inWindow = (s: number) =>
    (cmp.first_step === null || s >= cmp.first_step) &&
    (cmp.last_step === null || s <= cmp.last_step);
  for (const s of [...sa.steps, ...sb.steps]) {
    if (Math.abs(s - step) <= radius && inWindow(s)) steps.add(s);
  }
  const value = (series: typeof sa, s: number) => {
    const i = series.steps.indexOf(s);
    return i < 0 ? null : series.values[i];
  };
  return [...steps].sort((x, y) => x - y).map((s) => {
    const a = value(sa, s);
    const b = value(sb, s);
    const both = a !== null && b !== null;
    return {
      step: s,
      a,
      b,
      diff: both ? b - a : null,
      ulp: both ? ulpDistanceIn(unit, a, b) : null,
      divergent: s === step,
    };
  });
}

/** A divergence detail as a table. */
export function detailTable(run: LoadedRun, cmp: ComparisonSummary, radius = 5): Table {
  const rows = divergenceDetail(run, cmp, radius).map((r) => [
    r.divergent ? { text: `${r.step} ← first divergence`, strong: true } : c(String(r.step)),
    c(exact(r.a)),
    c(exact(r.b)),
    c(r.diff === null ? "—" : String(r.diff)),
    c(r.ulp === null ? "—" : count(r.ulp)),
  ]);
  return {
    id: `detail-${cmp.name}`,
    title: cmp.name,
    headers: [
      "step",
      `a: ${cmp.a}`,
      `b: ${cmp.b}`,
      "b − a",
      `ULP (${comparisonUlp(cmp)?.unit ?? "f64"})`,
    ],
    numeric: [false, true, true, true, true],
    rows,
    empty: "No values around the divergent step.",
  };
}

/** The comparison that shows a culprit's divergence best: against a reference phase first. */
export function culpritComparison(
  culprit: Culprit,
  comparisons: ComparisonSummary[],
): ComparisonSummary | undefined {
  const mine = comparisons.filter((c) => culprit.comparisons.includes(c.name));
  return mine.find((c) => c.b === culprit.phase && c.first_divergent_step === culprit.step) ??
    mine[0];
}

/**
 * ERROR comparisons without any divergent step (typically a phase that never produced metrics):
 * listed together in one block, since a per-step table would be empty.
 */
export function unjudgedComparisons(run: LoadedRun): ComparisonSummary[] {
  return run.summary.comparisons.filter((c) =>
    c.verdict === "ERROR" && c.first_divergent_step === null
  );
}

/** Summary line of the block listing {@link unjudgedComparisons} (after an ERROR mark). */
export function unjudgedTitle(count: number): string {
  return `${count} comparison${count === 1 ? "" : "s"} could not be judged`;
}

/** Phases that did not end ok or skipped: their logs are shown. */
export function erroredPhases(run: LoadedRun): PhaseSummary[] {
  return run.summary.phases.filter((p) => p.status === "failed" || p.status === "timeout");
}

/** One-sentence headline under the verdict line. */
export function headline(run: LoadedRun): string {
  const s = run.summary;
  const byVerdict = (v: Verdict) => s.comparisons.filter((c) => c.verdict === v).length;
  const parts = [`${s.comparisons.length} comparison${s.comparisons.length === 1 ? "" : "s"}`];
  for (const v of ["FAIL", "ERROR", "ABSTAIN", "PASS"] as Verdict[]) {
    if (byVerdict(v) > 0) parts.push(`${byVerdict(v)} ${v}`);
  }
  const bits = [parts.join(", ")];
  const broken = culprits(s);
  if (broken.length > 0) {
    bits.push(`diverged: ${broken.map((c) => `${c.phase} @ ${c.step ?? "?"}`).join(", ")}`);
  }
  const saves = s.save_steps ?? [s.save_at];
  bits.push(
    `${s.steps} steps, saved after step${saves.length > 1 ? "s" : ""} ${saves.join(", ")}`,
  );
  bits.push(`wall ${duration(s.wall_s)} (children ${duration(s.children_wall_s)})`);
  if (s.git_commit) bits.push(`commit ${s.git_commit.slice(0, 12)}`);
  if (s.interrupted) bits.push("INTERRUPTED");
  return bits.join(" · ");
}

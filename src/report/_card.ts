// The root-cause card as plain data, so report.md, report.html and junit.xml say the same thing.

import type { Finding, RunSummary, Verdict } from "../types/mod.ts";
import { verdictLabel } from "./_format.ts";

/** One card entry, ready to render. */
export interface CardEntry {
  /** `❌ FAIL · cause-converter`. */
  label: string;
  /** The verdict the entry explains. */
  verdict: Verdict;
  /** The diagnostic code (docs/parity.md, "Root-cause codes"). */
  code: string;
  /** What happened and the likely cause. */
  title: string;
  /** What to try next. */
  next: string;
  /** One line per group of identical failures. */
  evidence: string[];
  /** A failed phase's last log lines. */
  logTail?: string;
}

/** The card of a run: its findings (empty on PASS and for summaries written before findings). */
export function rootCauseCard(summary: RunSummary): CardEntry[] {
  return (summary.findings ?? []).map((f: Finding) => ({
    label: `${verdictLabel(f.verdict)} · ${f.code}`,
    verdict: f.verdict,
    code: f.code,
    title: f.title,
    next: f.next,
    evidence: f.evidence,
    logTail: f.log_tail || undefined,
  }));
}

/** The card as plain text lines (JUnit `system-out`, failure bodies). */
export function cardText(summary: RunSummary): string {
  return rootCauseCard(summary).map((e) =>
    [
      `${e.label}: ${e.title}`,
      `next: ${e.next}`,
      ...e.evidence.map((line) => `- ${line}`),
      ...(e.logTail ? ["log tail:", e.logTail] : []),
    ].join("\n")
  ).join("\n\n");
}

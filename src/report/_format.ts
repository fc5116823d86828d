// Text helpers shared by the Markdown, HTML and JUnit writers (numbers: src/format/numbers.ts).

import type { PlannerRecord, SecondOpinion, Verdict } from "../types/mod.ts";

/** Emoji shown before a verdict (GitHub renders these in headings and tables). */
const VERDICT_EMOJI: Record<Verdict | "N/A", string> = {
  PASS: "✅",
  FAIL: "❌",
  ERROR: "💥",
  ABSTAIN: "⚠️",
  "N/A": "➖",
};

/** `✅ PASS`, `❌ FAIL`, … */
export function verdictLabel(verdict: Verdict | "N/A"): string {
  return `${VERDICT_EMOJI[verdict]} ${verdict}`;
}

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]/g;

/** Removes terminal colour codes from log text. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

/** The last `lines` lines of `text` (trailing blank lines dropped). */
export function tailLines(text: string, lines: number): string {
  const all = text.replace(/\s+$/, "").split(/\r?\n/);
  return all.slice(Math.max(0, all.length - lines)).join("\n");
}

/** `name version (api)` of a plan's planner, or "" when the plan file names none. */
export function plannerText(p: PlannerRecord | undefined): string {
  return p ? [p.name, p.version, p.api ? `(${p.api})` : ""].filter(Boolean).join(" ") : "";
}

/** `equal`, `differs: ...` or `unavailable: ...`, or "" when there was no second opinion. */
export function secondOpinionText(o: SecondOpinion | undefined): string {
  if (!o) return "";
  if (!o.available) return `unavailable: ${o.first_difference ?? ""}`;
  return o.equal ? "equal" : `differs: ${o.first_difference ?? ""}`;
}

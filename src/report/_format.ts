// Text helpers shared by the Markdown, HTML and JUnit writers.

import type { Verdict } from "../types/summary.ts";

/** Emoji shown before a verdict (GitHub renders these in headings and tables). */
export const VERDICT_EMOJI: Record<Verdict | "N/A", string> = {
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

/** A value exactly as measured (shortest round-trip form), `—` for missing. */
export function exact(value: number | null | undefined): string {
  if (value === null || value === undefined) return "—";
  return String(value);
}

/** A derived statistic to 4 significant digits (`0` stays `0`), `—` for missing. */
export function stat(value: number | null | undefined): string {
  if (value === null || value === undefined) return "—";
  if (value === 0 || !Number.isFinite(value)) return String(value);
  const a = Math.abs(value);
  if (a >= 1e-3 && a < 1e6) return String(Number(value.toPrecision(4)));
  return value.toExponential(3).replace(/\.?0+e/, "e");
}

/** An integer count with thin grouping (`1 234 567`), `—` for missing. */
export function count(value: number | null | undefined): string {
  if (value === null || value === undefined) return "—";
  if (!Number.isFinite(value)) return String(value);
  return Math.round(value).toString().replace(/\B(?=(\d{3})+(?!\d))/g, " ");
}

/** Bytes in binary units (`48 KiB`), exact bytes below 1 KiB. */
export function bytes(value: number | null | undefined): string {
  if (value === null || value === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = value;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${Number(v.toPrecision(4))} ${units[u]}`;
}

/** Seconds with one decimal (`9.8 s`). */
export function seconds(value: number | null | undefined): string {
  if (value === null || value === undefined) return "—";
  return `${value.toFixed(1)} s`;
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

/**
 * Helpers for the chart tests: walking a spec's views, layers and inline data, compiling without
 * warnings, and the real quickstart run captured in `testdata/`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { parseLossesCsv } from "./losses_table.ts";
import type { LossTable } from "./losses_table.ts";
import { compileSpec, renderSvg } from "./render_chart.ts";
import type { ChartSpec } from "./_spec.ts";
import type { RunSummary } from "../types/summary.ts";

/** Any JSON node of a spec. */
// deno-lint-ignore no-explicit-any
export type Json = any;

/** Every node of a spec (objects only), depth first. */
export function nodes(spec: ChartSpec): Json[] {
  const out: Json[] = [];
  const walk = (node: Json) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === "object") {
      out.push(node);
      for (const [k, v] of Object.entries(node)) if (k !== "data" && k !== "datasets") walk(v);
    }
  };
  walk(spec);
  return out;
}

/** Every inline data array of a spec (`data.values` and top-level `datasets`), depth first. */
export function dataValues(spec: ChartSpec): Json[][] {
  const out: Json[][] = Object.values((spec.datasets ?? {}) as Record<string, Json[]>);
  for (const node of nodes(spec)) if (node.data?.values) out.push(node.data.values);
  return out;
}

/** The rows a node draws: its inline values or the named dataset. */
export function rowsOf(spec: ChartSpec, node: Json): Json[] {
  if (node.data?.values) return node.data.values;
  if (node.data?.name) return (spec.datasets as Record<string, Json[]>)[node.data.name];
  return [];
}

/** Unit views (nodes with a mark) whose mark type is `type`. */
export function marksOf(spec: ChartSpec, type: string): Json[] {
  return nodes(spec).filter((n) => n.mark === type || n.mark?.type === type);
}

/** Asserts that vega-lite compiles the spec without a warning. */
export async function compilesCleanly(spec: ChartSpec): Promise<void> {
  const warnings: string[] = [];
  await compileSpec(spec, warnings);
  assert.deepEqual(warnings, []);
}

/** Renders the spec to SVG and asserts that neither vega-lite nor vega warned. */
export async function rendersCleanly(spec: ChartSpec): Promise<string> {
  const warnings: string[] = [];
  const svg = await renderSvg(spec, warnings);
  assert.deepEqual(warnings, []);
  return svg;
}

/** The text of every `<text>` element of an SVG, in document order. */
export function svgTexts(svg: string): string[] {
  return [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) =>
    m[1].replace(/&amp;/g, "&").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(
      /&quot;/g,
      '"',
    ).replace(/&#39;/g, "'")
  );
}

/** Steps `from..to` inclusive. */
export const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** The quickstart run with `fault=master-from-bf16` (testdata/README.md). */
export async function quickstartMasterFromBf16(): Promise<
  { summary: RunSummary; losses: LossTable }
> {
  const dir = new URL("./testdata/quickstart_master_from_bf16/", import.meta.url);
  const summary = JSON.parse(await Deno.readTextFile(new URL("summary.json", dir))) as RunSummary;
  const losses = parseLossesCsv(await Deno.readTextFile(new URL("losses.csv", dir)));
  return { summary, losses };
}

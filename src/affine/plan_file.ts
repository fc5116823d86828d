/**
 * Plan files (docs/plan-sync.md, "Plan files"; `schema_version` 1): the segments of every parameter of
 * one sync together with the two maps they were planned from, so any reader can verify them.
 *
 * ```json
 * { "schema_version": 1, "policy": "local_first_least_loaded",
 *   "source_processes": {"0": 0}, "target_processes": {"0": 0, "1": 0},
 *   "parameters": { "w": { "element_size": 4, "source_map": {...}, "target_map": {...},
 *                          "segments": [{"shape": [...], "source": [...], "target": [...]}] } } }
 * ```
 *
 * @module
 */

import { AffineError } from "./affine_errors.ts";
import { mapToDict } from "./map.ts";
import type { ParamAffineMapDict } from "./map.ts";
import type {
  MapPair,
  ProcessMapping,
  TransferPlans,
  TransferSegmentDict,
} from "./plan_transfers.ts";
import { toProcessMap } from "./plan_transfers.ts";

/** Largest accepted bytes per element (the widest numeric types are 16 bytes; 64 leaves room). */
export const MAX_ELEMENT_SIZE = 64;

/** The plan file schema version this module reads and writes. */
export const PLAN_SCHEMA_VERSION = 1;

/** One parameter's entry in a plan file. */
export interface PlanFileParameter {
  /** Bytes per element. */
  element_size: number;
  /** The layout the segments read from (affine map v1 dict). */
  source_map: ParamAffineMapDict;
  /** The layout the segments write (affine map v1 dict). */
  target_map: ParamAffineMapDict;
  /** Segments in DeepSpeed `TransferSegment.to_dict()` form. */
  segments: TransferSegmentDict[];
}

/** A plan file. */
export interface PlanFile {
  /** Always 1. */
  schema_version: 1;
  /** Name of the policy that chose the holders (free text for foreign planners). */
  policy: string;
  /** Source location → process (empty: unknown, nothing counts as local). */
  source_processes: Record<string, number>;
  /** Target location → process (empty: unknown, nothing counts as local). */
  target_processes: Record<string, number>;
  /** Parameters by name. */
  parameters: Record<string, PlanFileParameter>;
  /** Who planned it (foreign planners say; the harness's own plans leave it out). */
  planner?: { name: string; [field: string]: unknown };
}

/** Inputs of {@link buildPlanFile} besides the plans. */
export interface PlanFileInputs {
  /** Policy name recorded in the file. */
  policy: string;
  /** The map pairs the plans were made from. */
  pairs: ReadonlyMap<string, MapPair> | Readonly<Record<string, MapPair>>;
  /** Source location → process. */
  sourceProcesses?: ProcessMapping;
  /** Target location → process. */
  targetProcesses?: ProcessMapping;
}

function processRecord(mapping?: ProcessMapping): Record<string, number> {
  const out: Record<string, number> = {};
  const m = toProcessMap(mapping);
  if (m) { for (const k of [...m.keys()].sort((a, b) => a - b)) out[String(k)] = m.get(k)!; }
  return out;
}

/** Assembles a plan file from {@link planTransfers}' result and its inputs. */
export function buildPlanFile(plans: TransferPlans, inputs: PlanFileInputs): PlanFile {
  const pairs = inputs.pairs instanceof Map
    ? inputs.pairs
    : new Map(Object.entries(inputs.pairs as Record<string, MapPair>));
  const parameters: Record<string, PlanFileParameter> = {};
  for (const [name, plan] of plans.parameters) {
    const pair = pairs.get(name);
    if (!pair) throw new AffineError(`buildPlanFile: no map pair for parameter ${name}`);
    parameters[name] = {
      element_size: plan.elementSize,
      source_map: mapToDict(pair.source),
      target_map: mapToDict(pair.target),
      segments: plan.segments,
    };
  }
  return {
    schema_version: PLAN_SCHEMA_VERSION,
    policy: inputs.policy,
    source_processes: processRecord(inputs.sourceProcesses),
    target_processes: processRecord(inputs.targetProcesses),
    parameters,
  };
}

/** Serialises a plan file: one parameter per block, one segment per line, stable key order. */
export function stringifyPlanFile(plan: PlanFile): string {
  const lines: string[] = [];
  lines.push("{");
  lines.push(`  "schema_version": ${JSON.stringify(plan.schema_version)},`);
  lines.push(`  "policy": ${JSON.stringify(plan.policy)},`);
  lines.push(`  "source_processes": ${JSON.stringify(plan.source_processes)},`);
  lines.push(`  "target_processes": ${JSON.stringify(plan.target_processes)},`);
  const names = Object.keys(plan.parameters);
  if (names.length === 0) {
    lines.push(`  "parameters": {}`);
  } else {
    lines.push(`  "parameters": {`);
    names.forEach((name, i) => {
      const p = plan.parameters[name];
      lines.push(`    ${JSON.stringify(name)}: {`);
      lines.push(`      "element_size": ${JSON.stringify(p.element_size)},`);
      lines.push(`      "source_map": ${JSON.stringify(p.source_map)},`);
      lines.push(`      "target_map": ${JSON.stringify(p.target_map)},`);
      if (p.segments.length === 0) lines.push(`      "segments": []`);
      else {
        lines.push(`      "segments": [`);
        p.segments.forEach((s, k) => {
          const comma = k + 1 < p.segments.length ? "," : "";
          lines.push(`        ${JSON.stringify(s)}${comma}`);
        });
        lines.push(`      ]`);
      }
      lines.push(`    }${i + 1 < names.length ? "," : ""}`);
    });
    lines.push(`  }`);
  }
  lines.push("}");
  return lines.join("\n") + "\n";
}

/** Writes a plan file (see {@link stringifyPlanFile}). */
export async function writePlanFile(path: string, plan: PlanFile): Promise<void> {
  await Deno.writeTextFile(path, stringifyPlanFile(plan));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Checks the envelope of a parsed plan file (version, policy, process mappings, one entry per
 * parameter with `element_size`, both maps and a segment list) and returns it typed. Geometry,
 * maps and segments are judged by `verifyPlan`, not here.
 *
 * @throws {AffineError} naming the first malformed field.
 */
export function parsePlanFile(raw: unknown): PlanFile {
  if (!isRecord(raw)) throw new AffineError("plan: expected a JSON object");
  if (raw.schema_version !== PLAN_SCHEMA_VERSION) {
    throw new AffineError(
      `plan.schema_version: expected ${PLAN_SCHEMA_VERSION}, got ${
        JSON.stringify(raw.schema_version)
      }`,
    );
  }
  if (typeof raw.policy !== "string") throw new AffineError("plan.policy: expected a string");
  for (const field of ["source_processes", "target_processes"] as const) {
    const m = raw[field];
    if (!isRecord(m)) throw new AffineError(`plan.${field}: expected an object`);
    for (const [k, v] of Object.entries(m)) {
      if (!/^(0|[1-9][0-9]*)$/.test(k)) {
        throw new AffineError(`plan.${field}: key ${JSON.stringify(k)} is not a location`);
      }
      if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
        throw new AffineError(`plan.${field}.${k}: expected a non-negative integer process`);
      }
    }
  }
  if (!isRecord(raw.parameters)) throw new AffineError("plan.parameters: expected an object");
  if (
    raw.planner !== undefined && (!isRecord(raw.planner) || typeof raw.planner.name !== "string")
  ) {
    throw new AffineError("plan.planner: expected an object with a string name");
  }
  for (const [name, p] of Object.entries(raw.parameters)) {
    const at = `plan.parameters.${name}`;
    if (!isRecord(p)) throw new AffineError(`${at}: expected an object`);
    if (
      typeof p.element_size !== "number" || !Number.isInteger(p.element_size) || p.element_size <= 0
    ) {
      throw new AffineError(`${at}.element_size: expected a positive integer`);
    }
    if (p.element_size > MAX_ELEMENT_SIZE) {
      throw new AffineError(
        `${at}.element_size: ${p.element_size} bytes per element; at most ${MAX_ELEMENT_SIZE}`,
      );
    }
    if (!isRecord(p.source_map)) throw new AffineError(`${at}.source_map: expected a map object`);
    if (!isRecord(p.target_map)) throw new AffineError(`${at}.target_map: expected a map object`);
    if (!Array.isArray(p.segments)) throw new AffineError(`${at}.segments: expected a list`);
  }
  return raw as unknown as PlanFile;
}

/**
 * Reads and parses a plan file.
 *
 * @throws {Deno.errors.NotFound} and other I/O errors as they are.
 * @throws {SyntaxError} when the file is not JSON.
 * @throws {AffineError} when the envelope is malformed ({@link parsePlanFile}).
 */
export async function readPlanFile(path: string): Promise<PlanFile> {
  return parsePlanFile(JSON.parse(await Deno.readTextFile(path)));
}

/**
 * Drives `bench/deepspeed_plan_timer.py`, the timer of DeepSpeed's installed `plan_transfer`, from
 * the benches and tests: one long-lived Python process in the DeepSpeed venv, spoken to in JSON
 * lines, so DeepSpeed and the harness's planner can be timed interleaved on identical maps.
 *
 * @module
 */

import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { mapToDict, segmentDifferences } from "../src/affine/mod.ts";
import type {
  MapPair,
  PlacementDescriptor,
  PlanBudget,
  TransferSegmentDict,
} from "../src/affine/mod.ts";
import { DEEPSPEED_VENV } from "../src/presets/deepspeed_preset.ts";

/** The timer program. */
export const TIMER_SCRIPT: string = join(
  dirname(fileURLToPath(import.meta.url)),
  "deepspeed_plan_timer.py",
);

/** The venv's python, resolved as the `deepspeed` preset resolves it. */
export const DEEPSPEED_PYTHON: string = join(DEEPSPEED_VENV, "bin/python");

/** The sentence shown when the DeepSpeed venv is missing. */
export const NO_VENV_SENTENCE: string =
  `DeepSpeed is not installed at ${DEEPSPEED_VENV}: run deno task setup-deepspeed ` +
  "(or point PARITY_DEEPSPEED_VENV at a venv with deepspeed).";

/** Whether the DeepSpeed venv's python exists. */
export function deepspeedAvailable(): boolean {
  return existsSync(DEEPSPEED_PYTHON);
}

/** The two replica choices both planners make: DeepSpeed's default and a `replica_selector`. */
export type SelectorName = "first_holder" | "highest_holder";

/** A failure of the timer process or a request it refused; `message` is one sentence. */
export class DeepSpeedTimerError extends Error {
  /** The parameter DeepSpeed refused, when a refusal caused it. */
  readonly parameter?: string;
  constructor(message: string, parameter?: string) {
    super(message);
    this.name = "DeepSpeedTimerError";
    this.parameter = parameter;
  }
}

/** One timed run of DeepSpeed over every parameter of a map set. */
export interface DeepSpeedRun {
  /** `time.perf_counter` milliseconds. */
  wall_ms: number;
  /** `time.process_time` milliseconds (the timer process's CPU). */
  cpu_ms: number;
}

/** What a `time` request returned. */
export interface DeepSpeedTiming {
  /** The runs that finished. */
  runs: DeepSpeedRun[];
  /** Whether the last run was stopped at the timeout. */
  timedOut: boolean;
  /** DeepSpeed's `TransferSegment.to_dict()` lists by parameter, when asked for. */
  segments?: Record<string, TransferSegmentDict[]>;
}

/** DeepSpeed's `PlanBudget` field names for the harness's. */
const BUDGET_FIELDS: Record<keyof PlanBudget, string> = {
  maxNdim: "max_ndim",
  maxPiecesPerMap: "max_pieces_per_map",
  maxPairChecks: "max_pair_checks",
  maxSegments: "max_segments",
  maxMergePasses: "max_merge_passes",
  maxPlanBytes: "max_plan_bytes",
  maxMergeChecks: "max_merge_checks",
};

/** The given fields of a harness budget as DeepSpeed `PlanBudget` keyword arguments. */
export function budgetToDeepSpeed(budget: Partial<PlanBudget> = {}): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(budget)) {
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value)) {
      throw new RangeError(`budget ${key}: ${value} is not an integer DeepSpeed can take`);
    }
    out[BUDGET_FIELDS[key as keyof PlanBudget]] = value;
  }
  return out;
}

/** A running timer process. */
export interface DeepSpeedTimer {
  /** DeepSpeed's and Python's versions, as the timer imported them. */
  readonly versions: { deepspeed: string; python: string };
  /**
   * Sends a map set under `id`. With `placements`, the timer also compares each map with
   * DeepSpeed's `autoep_placement_to_affine_map`; the parameters whose maps differ are returned.
   */
  load(
    id: string,
    pairs: ReadonlyMap<string, MapPair>,
    options?: {
      budget?: Partial<PlanBudget>;
      placements?: ReadonlyMap<
        string,
        { source: PlacementDescriptor; target: PlacementDescriptor }
      >;
    },
  ): Promise<{ loweringDiffers: string[] }>;
  /** Plans map set `id` `runs` times; each run is stopped after `timeoutS` seconds (0: never). */
  time(
    id: string,
    selector: SelectorName,
    options?: { runs?: number; timeoutS?: number; segments?: boolean },
  ): Promise<DeepSpeedTiming>;
  /** Ends the process. */
  close(): Promise<void>;
}

/**
 * Starts the timer in the DeepSpeed venv.
 *
 * @throws {DeepSpeedTimerError} when the venv is missing or the timer does not start.
 */
export async function startDeepSpeedTimer(): Promise<DeepSpeedTimer> {
  if (!deepspeedAvailable()) throw new DeepSpeedTimerError(NO_VENV_SENTENCE);
  const child = new Deno.Command(DEEPSPEED_PYTHON, {
    args: [TIMER_SCRIPT],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { PYTHONUNBUFFERED: "1", PYTHONDONTWRITEBYTECODE: "1" },
  }).spawn();
  let stderrTail = "";
  const stderrDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({
      write(chunk) {
        stderrTail = (stderrTail + chunk).slice(-4000);
      },
    }),
  ).catch(() => {});
  const writer = child.stdin.getWriter();
  const lines = _lines(child.stdout);
  const encoder = new TextEncoder();
  const lastLine = () =>
    stderrTail.trim().split("\n").filter((l) => l.trim() !== "").at(-1) ?? "no output";

  const ask = async (request: Record<string, unknown>): Promise<Record<string, unknown>> => {
    try {
      await writer.write(encoder.encode(JSON.stringify(request) + "\n"));
    } catch {
      throw new DeepSpeedTimerError(`the DeepSpeed timer is gone (${lastLine()})`);
    }
    const { value, done } = await lines.next();
    if (done) {
      const status = await child.status;
      throw new DeepSpeedTimerError(
        `the DeepSpeed timer exited with code ${status.code} (${lastLine()})`,
      );
    }
    const reply = JSON.parse(value) as Record<string, unknown>;
    if (reply.ok !== true) {
      throw new DeepSpeedTimerError(
        `DeepSpeed: ${reply.error}`,
        typeof reply.parameter === "string" ? reply.parameter : undefined,
      );
    }
    return reply;
  };

  const versions = await ask({ op: "version" }) as unknown as {
    deepspeed: string;
    python: string;
  };
  return {
    versions: { deepspeed: versions.deepspeed, python: versions.python },
    async load(id, pairs, options = {}) {
      const parameters: Record<string, unknown> = {};
      for (const [name, pair] of pairs) {
        parameters[name] = { source: mapToDict(pair.source), target: mapToDict(pair.target) };
      }
      const reply = await ask({
        op: "load",
        id,
        parameters,
        budget: budgetToDeepSpeed(options.budget),
        placements: options.placements ? Object.fromEntries(options.placements) : {},
      });
      return { loweringDiffers: reply.lowering_differs as string[] };
    },
    async time(id, selector, options = {}) {
      const reply = await ask({
        op: "time",
        id,
        selector,
        runs: options.runs ?? 1,
        timeout_s: options.timeoutS ?? 0,
        segments: options.segments ?? false,
      });
      return {
        runs: reply.runs as DeepSpeedRun[],
        timedOut: reply.timed_out === true,
        segments: reply.segments as Record<string, TransferSegmentDict[]> | undefined,
      };
    },
    async close() {
      await writer.close().catch(() => {});
      await child.status;
      await stderrDone;
    },
  };
}

/** The lines of a byte stream, without their line ends. */
async function* _lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of stream) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.indexOf("\n")) >= 0) {
      yield buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
    }
  }
  if (buffered !== "") yield buffered;
}

/**
 * The first place two plans of one map set differ, as a sentence, or null when every parameter's
 * segment list is equal segment for segment (shape, source and target of each, in order).
 */
export function firstSegmentDifference(
  harness: ReadonlyMap<string, readonly TransferSegmentDict[]>,
  deepspeed: Readonly<Record<string, readonly TransferSegmentDict[]>>,
): string | null {
  const d = segmentDifferences(harness, new Map(Object.entries(deepspeed)))[0];
  if (!d) return null;
  const [ours, theirs] = d.counts;
  if (ours === undefined) return `parameter ${d.parameter}: planned by DeepSpeed only`;
  if (theirs === undefined) return `parameter ${d.parameter}: planned by the harness only`;
  const text = (t: string) => t === "nothing" ? "none" : t;
  return `parameter ${d.parameter}, segment ${d.index} (harness ${ours} segments, DeepSpeed ` +
    `${theirs}): harness ${text(d.segments[0])}, DeepSpeed ${text(d.segments[1])}`;
}

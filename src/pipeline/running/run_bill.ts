/**
 * The bill of a run (issue 37): step-equivalents trained, device-seconds, the critical path
 * and what the cache and the suite's shared phases saved, from the resolved phases and their
 * summaries; and the planned bill `parity plan` prints before anything runs. Bookkeeping only:
 * nothing here weighs on the verdict.
 *
 * @module
 */

import { deviceDemand } from "../../experiment/mod.ts";
import {
  type BillSaving,
  type PhaseSpec,
  type PhaseSummary,
  type RunBill,
  savesCheckpoint,
} from "../../types/mod.ts";

/**
 * Optimizer steps a phase trains: a baseline, split or repeat from step 1 to its stop, a resume
 * (or calibration) from the save to its stop; a converter, planner or plan executor none.
 */
export function phaseSteps(spec: PhaseSpec, saveAt: number): number {
  if (spec.tool !== "trainer") return 0;
  const from = spec.role === "resume" || spec.role === "calibrate" ? spec.fromStep ?? saveAt : 0;
  return Math.max(0, spec.stopAt - from);
}

/** Devices a phase holds: its pool share, else a trainer's world size and one core for a tool. */
export function phaseDevices(spec: PhaseSpec): number {
  return spec.devices ?? deviceDemand(spec.tool, spec.args, "cpu");
}

/**
 * The longest chain of `weight` through the phases' `consumes` (phases in graph order, producers
 * first): its total and its phases, first to last.
 */
export function longestChain(
  specs: readonly PhaseSpec[],
  weight: (spec: PhaseSpec) => number,
): { total: number; phases: string[] } {
  const best = new Map<string, { total: number; phases: string[] }>();
  let top = { total: 0, phases: [] as string[] };
  for (const spec of specs) {
    let before = { total: 0, phases: [] as string[] };
    for (const c of spec.consumes) {
      const b = best.get(c);
      if (b && b.total > before.total) before = b;
    }
    const own = { total: before.total + weight(spec), phases: [...before.phases, spec.name] };
    best.set(spec.name, own);
    if (own.total > top.total) top = own;
  }
  return top;
}

/** The run's bill from its phases (graph order) and their summaries, and its wall time. */
export function runBill(
  specs: readonly PhaseSpec[],
  summaries: readonly PhaseSummary[],
  saveAt: number,
  wallS: number,
): RunBill {
  const byName = new Map(summaries.map((s) => [s.name, s]));
  const launched = (spec: PhaseSpec) => {
    const s = byName.get(spec.name);
    return s !== undefined && !s.cached && s.status !== "skipped";
  };
  const saving = (pick: (s: PhaseSummary) => boolean): BillSaving => {
    const reused = specs.filter((spec) => {
      const s = byName.get(spec.name);
      return s !== undefined && s.cached && pick(s);
    });
    return {
      phases: reused.length,
      step_equivalents: sum(reused.map((spec) => phaseSteps(spec, saveAt))),
      // What each took where it ran, on the devices it holds.
      device_seconds: round3(
        sum(reused.map((spec) => (byName.get(spec.name)!.reused_wall_s ?? 0) * phaseDevices(spec))),
      ),
    };
  };
  const ran = specs.filter(launched);
  const wall = (spec: PhaseSpec) => launched(spec) ? byName.get(spec.name)!.wall_s : 0;
  const chain = longestChain(specs, wall);
  return {
    step_equivalents: sum(ran.map((spec) => phaseSteps(spec, saveAt))),
    device_seconds: round3(sum(ran.map((spec) => wall(spec) * phaseDevices(spec)))),
    wall_s: wallS,
    critical_path_s: round3(chain.total),
    critical_path: chain.phases,
    wall_over_critical: chain.total > 0 ? round3(wallS / chain.total) : null,
    cached: saving((s) => s.shared_from === undefined),
    shared: saving((s) => s.shared_from !== undefined),
    ...fusedSaving(specs, byName, saveAt),
  };
}

/**
 * What a fused split saved: the split phase that never ran, i.e. `saveAt` steps on the
 * baseline's devices, priced at the baseline's measured wall (here or where it was reused from)
 * × saveAt/steps. Nothing for a separate split.
 */
function fusedSaving(
  specs: readonly PhaseSpec[],
  byName: ReadonlyMap<string, PhaseSummary>,
  saveAt: number,
): { fused?: BillSaving } {
  const baseline = specs.find((spec) => spec.role === "baseline" && savesCheckpoint(spec));
  if (baseline === undefined) return {};
  const s = byName.get(baseline.name);
  const wall = s === undefined ? 0 : s.cached ? s.reused_wall_s ?? 0 : s.wall_s;
  return {
    fused: {
      phases: 1,
      step_equivalents: saveAt,
      device_seconds: round3(wall * (saveAt / baseline.stopAt) * phaseDevices(baseline)),
    },
  };
}

/** What `parity plan` prints before anything runs: the work if no phase is reused. */
export interface PlannedBill {
  /** Phases. */
  phases: number;
  /** Optimizer steps every phase together trains. */
  step_equivalents: number;
  /** Step-equivalents on the longest chain (the fewest a run with devices enough waits for). */
  critical_path_steps: number;
  /** That chain's phases. */
  critical_path: string[];
  /** Devices the widest single phase takes. */
  widest_phase_devices: number;
  /** Step-equivalents `schedule.split: fused` saves (the split that does not run); 0 otherwise. */
  fused_step_equivalents: number;
}

/** The planned bill of the resolved phases. */
export function plannedBill(specs: readonly PhaseSpec[], saveAt: number): PlannedBill {
  const chain = longestChain(specs, (spec) => phaseSteps(spec, saveAt));
  return {
    phases: specs.length,
    step_equivalents: sum(specs.map((spec) => phaseSteps(spec, saveAt))),
    critical_path_steps: chain.total,
    critical_path: chain.phases,
    widest_phase_devices: Math.max(0, ...specs.map(phaseDevices)),
    fused_step_equivalents: specs.some((spec) => spec.role === "baseline" && savesCheckpoint(spec))
      ? saveAt
      : 0,
  };
}

/** One console line of a run's bill. */
export function billLine(bill: RunBill): string {
  const saved = (
    [["cache", bill.cached], ["sharing", bill.shared], ["fusing", bill.fused]] as const
  ).flatMap(([what, s]) =>
    s !== undefined && s.phases > 0
      ? [`${what} saved ${savingText(s)} (${s.phases} phase${s.phases === 1 ? "" : "s"})`]
      : []
  );
  return `bill: ${bill.step_equivalents} step-equivalents trained, ` +
    `${bill.device_seconds.toFixed(1)} device-seconds, wall ${bill.wall_s.toFixed(1)} s vs ` +
    `critical path ${bill.critical_path_s.toFixed(1)} s` +
    (bill.wall_over_critical !== null ? ` (×${bill.wall_over_critical.toFixed(2)})` : "") +
    (saved.length > 0 ? `; ${saved.join(", ")}` : "");
}

/** `40 step-equivalents, 12.3 device-seconds` (the device-seconds where known). */
export function savingText(s: BillSaving): string {
  return `${s.step_equivalents} step-equivalents` +
    (s.device_seconds !== undefined ? `, ${s.device_seconds.toFixed(1)} device-seconds` : "");
}

function sum(xs: number[]): number {
  return xs.reduce((a, x) => a + x, 0);
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

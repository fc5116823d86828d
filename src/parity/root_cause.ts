/**
 * The root-cause card: what a failed (or unjudgeable) run most likely means, read from the whole
 * judgement rather than comparison by comparison. It groups identical failures (six comparisons
 * with the same values at step 21 are one finding), names the state components that differ,
 * reads the path pattern (native passes but universal fails → the converter; only plan resumes
 * fail → the plan; every resume fails at N+1 with state equal → something consumed between load
 * and the first step) and suggests the next action. Every finding carries a documented code
 * (docs/parity.md, "Root-cause codes").
 *
 * @module
 */

import type {
  ComparisonSummary,
  Diagnostic,
  Finding,
  PhaseSummary,
  PlanExecution,
  RunSummary,
  StateCheckSummary,
} from "../types/mod.ts";
import { driftFailureText } from "./lanes/mod.ts";
import { causeLines } from "./_child_tail.ts";
import {
  componentList,
  frameworkOf,
  GRAD_BUFFERS,
  loadedSaveText,
  masterNotRestored,
  tensorList,
} from "./state/mod.ts";
import { stat } from "../format/mod.ts";

/** The stable codes of {@link Finding}s. */
export const CAUSE_CODES = {
  phaseFailed: "cause-phase-failed",
  midAccumulation: "cause-save-mid-accumulation",
  lrSchedule: "cause-lr-schedule",
  stateNotRestored: "cause-state-not-restored",
  gradCarryover: "cause-grad-carryover",
  stateOnly: "cause-state-only",
  saveDiffers: "cause-save-differs",
  savePerturbs: "cause-save-perturbs",
  converter: "cause-converter",
  plan: "cause-plan",
  planBytes: "cause-plan-bytes",
  reshard: "cause-reshard",
  consumedBeforeFirstStep: "cause-consumed-before-first-step",
  updateDiffers: "cause-update-differs",
  nondeterministic: "cause-nondeterministic",
  driftBias: "cause-drift-bias",
  noEvidence: "cause-no-evidence",
  divergence: "cause-divergence",
} as const;

/** What {@link findRootCauses} reads: the judged parts of a summary. */
export type RootCauseInput =
  & Pick<
    RunSummary,
    "comparisons" | "state_checks" | "diagnostics" | "phases" | "noise_floor" | "save_at"
  >
  & Partial<Pick<RunSummary, "plan_sync">>;

/** Resume kind of each phase (`native`, `universal`, `plan`), from the resolved plan. */
export type ResumeKinds = Record<string, string | undefined>;

/**
 * What the divergence rules read: the failing comparisons grouped, and the facts about the
 * resumes, state checks and pre-flight diagnostics they are weighed against.
 */
export interface DivergenceFacts {
  /** The judged run. */
  run: RootCauseInput;
  /** Failure groups, most decisive first; `first` is `groups[0]`. */
  groups: Group[];
  /** The most decisive group. */
  first: Group;
  /** First resumed step (save_at + 1). */
  n1: number;
  /** Resume phases of the run. */
  resumes: string[];
  /** Resumes whose loss comparison against a full run FAILs. */
  failed: string[];
  /** Resumes whose loss comparison against a full run PASSes. */
  passed: string[];
  /** Resume kind of a phase. */
  kindOf: (phase: string) => string | undefined;
  /** Whether a resume is judged in the drift lane (another topology). */
  crossTopology: (phase: string) => boolean;
  /** Some resume fails and none passes. */
  allFail: boolean;
  /** Every failing comparison first fails at the same step (`first.step`). */
  oneStep: boolean;
  /** `Every resume`, `The resume`, or how many of how many were judged. */
  every: string;
  /** State components whose restored digest differs. */
  differing: string[];
  /** State components whose saved digest differs from the baseline's at the save step. */
  saveDiffering: string[];
  /** `; state check names rng` or empty. */
  stateNote: string;
  /** Every state check PASSes (and there is one). */
  stateEqual: boolean;
  /** No state check had digests. */
  noDigests: boolean;
  /** A diagnostic of the run by code. */
  diagnostic: (code: string) => Diagnostic | undefined;
  /** A drift comparison whose bias test broke. */
  biased: ComparisonSummary | undefined;
}

/** The part of a divergence finding a rule writes (the rest is shared by every rule). */
export type RuleCard = Pick<Finding, "title" | "next">;

/** One named divergence rule: when it applies and the card it writes. */
export interface DivergenceRule {
  /** The finding's code. */
  code: string;
  /** Whether the pattern holds. */
  applies: (facts: DivergenceFacts) => boolean;
  /** Title and next action. */
  card: (facts: DivergenceFacts) => RuleCard;
}

/**
 * The divergence rules, most specific first; the first that applies writes the card, and
 * `cause-divergence` always applies.
 */
export const DIVERGENCE_RULES: readonly DivergenceRule[] = [
  {
    code: CAUSE_CODES.midAccumulation,
    applies: (f) => f.diagnostic("save-mid-accumulation") !== undefined,
    card: (f) => ({
      title:
        `The checkpoint was saved inside a gradient-accumulation window: ${f.first.headline}${f.stateNote}.`,
      next: "Save on an accumulation boundary (after the optimizer step, micro_step % " +
        "grad_accum == 0); no loader can recover the partial gradient.",
    }),
  },
  {
    code: CAUSE_CODES.saveDiffers,
    applies: (f) => f.saveDiffering.length > 0,
    card: (f) => ({
      title: `${saveWrong(f.run, f.saveDiffering)}; ${f.every.toLowerCase()} ` +
        `loads it as saved and diverges: ${f.first.headline}${f.first.more}${f.stateNote}.`,
      next: saveNext(f.run, f.saveDiffering),
    }),
  },
  {
    code: CAUSE_CODES.lrSchedule,
    applies: (f) => f.diagnostic("lr-schedule-mismatch") !== undefined,
    card: (f) => ({
      title: `The LR schedule is not restored: ${
        f.diagnostic("lr-schedule-mismatch")!.message
      }; ${f.first.headline}${f.first.more}${f.stateNote}.`,
      next: "Restore the LR scheduler state on load, and pin the schedule to the full run " +
        "(${steps}), not to the resumed process's own length.",
    }),
  },
  {
    code: CAUSE_CODES.gradCarryover,
    applies: (f) => f.differing.includes(GRAD_BUFFERS),
    card: (f) => ({
      title: `${f.every} diverges: ${f.first.headline}${f.first.more}${f.stateNote}. ` +
        `The ${gradCarryoverSentence(f.n1)}`,
      next: GRAD_CARRYOVER_NEXT,
    }),
  },
  {
    code: CAUSE_CODES.converter,
    applies: (f) =>
      f.failed.length > 0 && f.failed.every((p) => f.kindOf(p) !== "native") &&
      f.passed.some((p) => f.kindOf(p) === "native") &&
      f.failed.some((p) => f.kindOf(p) === "universal"),
    card: (f) =>
      // The universal folder, read back, holds the saved state: the converter is cleared.
      f.run.state_checks.some((s) => s.check === "convert" && s.verdict === "PASS")
        ? {
          title:
            `Native resumes pass; universal and reshard resumes fail (${
              f.failed.join(", ")
            }) although the universal folder, read back, holds the saved state: the loader of ` +
            `re-sliced checkpoints${f.stateNote}. ${f.first.headline}${f.first.more}.`,
          next: "Inspect how the universal folder is loaded for the named components (DeepSpeed: " +
            "the ZeRO optimizer's `load_hp_checkpoint_state_from_checkpoint_dir*`), not the " +
            "converter, whose output was checked.",
        }
        : {
          title: `Native resumes pass; universal and reshard resumes fail (${
            f.failed.join(", ")
          }): the converter, or the loader of re-sliced checkpoints${f.stateNote}. ${f.first.headline}${f.first.more}.`,
          next: "Inspect the universal converter for the named components (ds_to_universal); if " +
            "the resume read the universal folder as a native one, set " +
            "`checkpoint.load_universal: true` in the DeepSpeed config.",
        },
  },
  {
    code: CAUSE_CODES.plan,
    applies: (f) => f.failed.length > 0 && f.failed.every((p) => f.kindOf(p) === "plan"),
    card: (f) => ({
      title: `Only plan resumes fail (${f.failed.join(", ")}); the universal reshard to the ` +
        `same target passes: the transfer plan or its executor. ${f.first.headline}${f.first.more}.`,
      next: "Verify the plan (`deno task parity verify-plan <plan.json>`) and compare the " +
        "executor's reads with the universal loader's slicing for the first differing tensor.",
    }),
  },
  {
    code: CAUSE_CODES.driftBias,
    applies: (f) => f.biased !== undefined && f.failed.every(f.crossTopology),
    card: (f) => ({
      title: `The resume on another topology is biased, not drifting: ${f.biased!.reason}`,
      next: "Compare the optimizer hyper-parameters the resumed process applies (LR, weight " +
        "decay, betas, param groups) with the saving run's; reduction-order drift has no bias.",
    }),
  },
  {
    code: CAUSE_CODES.reshard,
    applies: (f) => f.failed.length > 0 && f.failed.every(f.crossTopology),
    card: (f) => {
      const same = f.passed.some((p) => !f.crossTopology(p))
        ? "Resumes on the saved topology pass; those on another topology fail"
        : "The resumes on another topology fail";
      const update = f.first.step === f.n1 + 1
        ? " The forward at step " + f.n1 + " matched, so the first update differs."
        : "";
      return {
        title: `${same} (${
          f.failed.join(", ")
        }) by far more than reduction-order drift: the reshard${f.stateNote}. ${f.first.headline}${f.first.more}.${update}${
          driftLaneNote(f.first.sample)
        }`,
        next: "Check how the loader maps experts and optimizer state onto the new EP ranks " +
          "(placement, expert index → EP rank) and the LR and weight decay the resumed process " +
          "applies; a state check names what moved, when it moved.",
      };
    },
  },
  {
    code: CAUSE_CODES.stateNotRestored,
    applies: (f) => f.differing.length > 0 && f.allFail,
    card: (f) => ({
      title:
        `${f.every} diverges: ${f.first.headline}${f.first.more}${f.stateNote} (restored ≠ saved).`,
      next: `Restore ${f.differing.map((d) => `\`${d}\``).join(", ")} on load (the checkpoint ` +
        "holds it, or the save never wrote it).",
    }),
  },
  {
    code: CAUSE_CODES.nondeterministic,
    applies: (f) =>
      f.allFail && f.oneStep && f.first.step === f.n1 && !f.run.noise_floor.repeats &&
      f.groups.every(tiny),
    card: (f) => ({
      title:
        `${f.every} differs from step ${f.n1} by a few ULPs (${f.first.headline}${f.first.more}), and no ` +
        "noise floor was measured: the trainer may simply not be bit-deterministic.",
      next: "Add `noise_floor: {repeats: 2}` (and `tolerance: {auto: true}`) to measure it: " +
        "exact lanes then ABSTAIN on noise and a tolerance lane still catches real bugs.",
    }),
  },
  {
    code: CAUSE_CODES.updateDiffers,
    applies: (f) => f.allFail && f.oneStep && f.first.step === f.n1 + 1 && f.stateEqual,
    card: (f) => ({
      title:
        `${f.every} matches at step ${f.n1} and fails at ${
          f.n1 + 1
        } (${f.first.headline}${f.first.more}) ` +
        "while every restored-state digest equals the saved one: the first update after the " +
        "resume differs, not the state.",
      next: "Compare the optimizer settings the resumed process applies with the saving run's: " +
        "LR (scale, param-group lr), weight decay, betas/eps, gradient clipping, loss scaling. " +
        "Then gradient carry-over: gradients the uninterrupted run left in its buffers at step " +
        `${f.n1} (a missing zero_grad, an accumulation window crossing the save) enter its ` +
        "update and a fresh process has none; emit `grads` events (parity_hooks does) so the " +
        "state check compares grad_buffers.",
    }),
  },
  {
    code: CAUSE_CODES.consumedBeforeFirstStep,
    applies: (f) =>
      f.allFail && f.oneStep && f.first.step === f.n1 && (f.stateEqual || f.noDigests),
    card: (f) => ({
      title:
        `${f.every} fails at the first resumed step ${f.n1} (${f.first.headline}${f.first.more}) while ` +
        (f.stateEqual ? "every restored-state digest equals the saved one" : "no digests exist") +
        ": something is consumed between load and the first step.",
      next: "Look for what draws from the restored state before step " + f.n1 + ": a data " +
        "loader or sampler seeded from the restored global RNG, a save that draws from the " +
        "RNG, an extra micro-batch." + (f.noDigests ? " Emit `loaded` digests to narrow it." : ""),
    }),
  },
  {
    code: CAUSE_CODES.divergence,
    applies: () => true,
    card: (f) => ({
      title: `${f.first.headline}${f.first.more}${f.stateNote}.`,
      next: "Open the first failing comparison's chart and the state checks; the first " +
        "divergent step says whether state (N+1) or an update (N+2) is wrong.",
    }),
  },
];

/** The card's sentence, after its "The", for gradients carried into the first resumed step `n1`. */
function gradCarryoverSentence(n1: number): string {
  return "uninterrupted run carried gradients into the next step that a fresh process does " +
    `not have: its gradient buffers were not empty as step ${n1} began.`;
}

/** What to check when the gradient buffers differ at the first resumed step. */
const GRAD_CARRYOVER_NEXT = "Zero the gradients once per optimizer step where the framework " +
  "expects it (a missing or misplaced zero_grad / model.zero_grad(), or one that runs only every " +
  "k steps); keep gradient-accumulation windows from crossing the save (save after the optimizer " +
  "step, micro_step % grad_accum == 0); look for anything that accumulates into .grad between " +
  "the optimizer step and the next step's backward (an extra backward for a metric, a hook). If " +
  "carrying gradients over is intended, the checkpoint must save the buffers and the resume " +
  "restore them.";

/** A rule over the whole judgement that adds findings of its own. */
export interface RootCauseRule {
  /** What it looks for. */
  name: string;
  /** Its findings (none when the pattern is absent). */
  find: (run: RootCauseInput, kinds: ResumeKinds) => Finding[];
}

/** The root-cause rules, in card order: most decisive first. */
export const ROOT_CAUSE_RULES: readonly RootCauseRule[] = [
  {
    name: "failed phases",
    find: (run) =>
      run.phases.filter((p) => p.status === "failed" || p.status === "timeout").map(phaseFinding),
  },
  { name: "plan executions", find: (run) => planExecutionFindings(run.plan_sync ?? []) },
  { name: "save", find: (run) => saveFindings(run) },
  { name: "universal folder", find: (run) => convertFindings(run) },
  { name: "save perturbs", find: (run) => savePerturbsFindings(run) },
  { name: "divergence", find: (run, kinds) => divergenceFindings(run, kinds) },
  { name: "state only", find: (run) => stateOnlyFindings(run) },
  { name: "noise floor", find: (run) => noiseFloorFindings(run) },
  { name: "no evidence", find: (run) => noEvidenceFindings(run) },
];

/**
 * Findings, most decisive first: failed phases (with their log tails), then the divergence
 * pattern with its likely cause and next action. Empty for a clean PASS.
 */
export function findRootCauses(run: RootCauseInput, kinds: ResumeKinds): Finding[] {
  return ROOT_CAUSE_RULES.flatMap((rule) => rule.find(run, kinds));
}

/**
 * The divergence cards: one per distinct fault pattern, each written by the first
 * {@link DIVERGENCE_RULES} rule that applies to it. A pattern is the set of state components the
 * restore checks of its resumes name: resumes broken in different places (one in `rng`, another in
 * `lr_scheduler`) get a card each, those broken alike share one. A failing save check explains
 * every resume, so it keeps them all on one card, as do runs without digests.
 */
function divergenceFindings(run: RootCauseInput, kinds: ResumeKinds): Finding[] {
  const failing = run.comparisons.filter((c) => c.verdict === "FAIL");
  if (failing.length === 0) return [];
  return _faultPatterns(run, failing).flatMap((pattern) => {
    const facts = divergenceFacts(pattern.run, kinds, pattern.failing);
    const rule = DIVERGENCE_RULES.find((r) => r.applies(facts))!;
    // The catch-all reads no pattern that would tie distinct failures together: only identical
    // failures share its card, so each group of them gets one.
    if (rule.code === CAUSE_CODES.divergence && facts.groups.length > 1) {
      return facts.groups.map((group) => {
        const own = pattern.failing.filter((c) => group.members.includes(c.name));
        return divergenceFinding(divergenceFacts(pattern.run, kinds, own), rule);
      });
    }
    return [divergenceFinding(facts, rule)];
  });
}

/** The card `rule` writes for one fault pattern. */
function divergenceFinding(facts: DivergenceFacts, rule: DivergenceRule): Finding {
  const { first, groups, stateNote } = facts;
  const named = [...new Set([...facts.saveDiffering, ...facts.differing])];
  return {
    verdict: "FAIL",
    comparisons: first.members,
    step: first.step ?? undefined,
    state: named.length > 0 ? named : undefined,
    evidence: groups.map(groupText),
    headline: `${first.headline}${stateNote}${first.more}`,
    code: rule.code,
    ...rule.card(facts),
  };
}

/** One fault pattern: its failing comparisons and the run as its rules see it. */
interface _FaultPattern {
  failing: ComparisonSummary[];
  run: RootCauseInput;
}

/**
 * Splits the failing comparisons by the components the restore checks of their phases name
 * (a comparison of two resumes takes both sets), earliest first. Each pattern's run keeps the
 * passing comparisons, its own failing ones, the resumes no other pattern holds, its own restore
 * checks, every save check, and the diagnostics of its phases (or of none).
 */
function _faultPatterns(run: RootCauseInput, failing: ComparisonSummary[]): _FaultPattern[] {
  const loads = run.state_checks.filter((s) => s.check === undefined);
  const saveFails = run.state_checks.some((s) => s.check === "save" && s.verdict === "FAIL");
  const named = (phase: string) => loads.find((s) => s.phase === phase)?.differing ?? [];
  const components = (c: ComparisonSummary) => new Set([...named(c.a), ...named(c.b)]);
  const bySignature = new Map<string, ComparisonSummary[]>();
  for (const group of groupFailures(failing)) {
    const members = group.members.map((name) => failing.find((x) => x.name === name)!);
    // Identical failures (same step, same values) are one fault even where one resume's restore
    // check names more: the components they all name decide the pattern (a CPU-Adam divergence
    // shared by a native and a universal resume stays one card beside the universal's own
    // param_groups).
    const shared = members.map(components).reduce((a, b) =>
      new Set([...a].filter((x) => b.has(x)))
    );
    const key = saveFails ? "" : [...shared].sort().join(",");
    bySignature.set(key, [...(bySignature.get(key) ?? []), ...members]);
  }
  if (bySignature.size === 1) return [{ failing, run }];
  const broken = new Set(failing.flatMap((c) => [c.a, c.b]));
  return [...bySignature.values()].map((own) => {
    const phases = new Set(own.flatMap((c) => [c.a, c.b]));
    return {
      failing: own,
      run: {
        ...run,
        // Other patterns' resumes are theirs: "every resume" counts this pattern's and the rest.
        phases: run.phases.filter((p) =>
          p.role !== "resume" || phases.has(p.name) || !broken.has(p.name)
        ),
        comparisons: run.comparisons.filter((c) => c.verdict !== "FAIL" || own.includes(c)),
        state_checks: run.state_checks.filter((s) => s.check !== undefined || phases.has(s.phase)),
        diagnostics: run.diagnostics.filter((d) => d.phase === undefined || phases.has(d.phase)),
      },
    };
  });
}

function divergenceFacts(
  run: RootCauseInput,
  kinds: ResumeKinds,
  failing: ComparisonSummary[],
): DivergenceFacts {
  const groups = groupFailures(failing);
  const first = { ...groups[0], more: _othersNote(groups) };
  // A save check judges the checkpoint, not a restore: it has a card of its own (as has a fused
  // split's perturbation check).
  const loads = run.state_checks.filter((s) => s.check === undefined);
  const differing = [...new Set(loads.flatMap((s) => s.differing))];
  const resumes = run.phases.filter((p) => p.role === "resume").map((p) => p.name);
  const versusBaseline = new Map<string, ComparisonSummary>();
  for (const c of run.comparisons) {
    if (resumes.includes(c.b) && !resumes.includes(c.a) && c.metric === "loss") {
      const prior = versusBaseline.get(c.b);
      if (prior === undefined || c.verdict === "FAIL") versusBaseline.set(c.b, c);
    }
  }
  const failed = [...versusBaseline.values()].filter((c) => c.verdict === "FAIL").map((c) => c.b);
  const passed = [...versusBaseline.values()].filter((c) => c.verdict === "PASS").map((c) => c.b);
  return {
    run,
    groups,
    first,
    n1: firstResumed(run, loads, failed),
    resumes,
    failed,
    passed,
    kindOf: (p) => kinds[p],
    crossTopology: (p) => versusBaseline.get(p)?.lane === "drift",
    allFail: failed.length > 0 && passed.length === 0,
    oneStep: groups.every((g) => g.step === groups[0].step),
    // The card counts what ran: "Every resume" only when every resume of the run was judged.
    every: failed.length === resumes.length
      ? (resumes.length === 1 ? "The resume" : "Every resume")
      : failed.length === 1
      ? `The one resume judged (${failed[0]}; ${resumes.length - 1} of ${resumes.length} not)`
      : `Each of the ${failed.length} resumes judged (${
        resumes.length - failed.length
      } of ${resumes.length} not)`,
    differing,
    saveDiffering: [
      ...new Set(
        run.state_checks.filter((s) => s.check === "save").flatMap((s) => s.differing),
      ),
    ],
    stateNote: differing.length > 0
      ? `; state check names ${componentList(differing, frameworkOf(loads))}${
        tensorSuffix(loads.filter((s) => s.verdict === "FAIL"))
      }${masterNote(loads)}${loadedSaveNote(loads)}`
      : "",
    stateEqual: loads.length > 0 && loads.every((s) => s.verdict === "PASS"),
    noDigests: loads.every((s) => !s.available),
    diagnostic: (code) => run.diagnostics.find((d) => d.code === code),
    biased: failing.find((c) => c.lane === "drift" && c.drift?.failure?.test === "bias"),
  };
}

/**
 * The save check's card when no comparison fails (the divergence rules write it otherwise): the
 * checkpoint does not hold what the uninterrupted run held at the save step, and no loss shows it
 * within the window.
 */
function saveFindings(run: RootCauseInput): Finding[] {
  if (run.comparisons.some((c) => c.verdict === "FAIL")) return [];
  return run.state_checks.filter((s) => s.check === "save" && s.verdict === "FAIL").map((s) => ({
    code: CAUSE_CODES.saveDiffers,
    verdict: "FAIL",
    phases: [s.phase],
    state: s.differing,
    headline: `the save differs from the uninterrupted run in ${s.differing.join(", ")}`,
    title: `${saveWrong(run, s.differing)}; no loss shows it within the window.`,
    next: saveNext(run, s.differing),
    evidence: [`${s.phase}: ${s.reason ?? s.differing.join(", ")}`],
  }));
}

/**
 * A fused split's perturbation card (issue 37), whatever the comparisons say: the baseline's
 * state just after its save differs from its state just before, so the run every resume is
 * compared with was changed by the save itself. Where the checkpoint took the same change, the
 * resumes match the perturbed baseline and no loss shows it; where it did not, they diverge.
 */
function savePerturbsFindings(run: RootCauseInput): Finding[] {
  return run.state_checks.filter((s) => s.check === "perturb" && s.verdict === "FAIL").map((s) => ({
    code: CAUSE_CODES.savePerturbs,
    verdict: "FAIL",
    phases: [s.phase],
    state: s.differing,
    headline: `the save perturbs the run in ${s.differing.join(", ")}`,
    title: `Saving at step ${run.save_at} changed the state ${s.phase} trains on in ` +
      `${componentList(s.differing, s.framework)}: the fused split's baseline is not the ` +
      "uninterrupted run, so its resumes are compared with a run the save itself moved.",
    next: `Make the save read-only for ${s.differing.join(", ")}: no draw from the running RNG, ` +
      "no data fetched, no counter or optimizer state advanced by saving; a separate split " +
      "(schedule.split: separate) shows what the save changes as a divergence.",
    evidence: [`${s.phase}: ${s.reason ?? s.differing.join(", ")}`],
  }));
}

function saveWrong(run: RootCauseInput, differing: string[]): string {
  const saves = run.state_checks.filter((s) => s.check === "save");
  const savers = [...new Set(saves.filter((s) => s.verdict === "FAIL").map((s) => s.phase))];
  const framework = frameworkOf(saves);
  const notInFiles = new Set(saves.flatMap((s) => s.not_in_files ?? []));
  const filesDiffer = new Set(saves.flatMap((s) => s.files_differing ?? []));
  const engine = differing.filter((d) => !notInFiles.has(d) && !filesDiffer.has(d));
  const parts: string[] = [];
  if (engine.length > 0) {
    parts.push(
      `what ${savers.join(" and ") || "split"} saved differs from the uninterrupted run's state ` +
        `at step ${run.save_at} in ${componentList(engine, framework)}`,
    );
  }
  if (notInFiles.size > 0) {
    parts.push(
      `the save wrote no ${componentList([...notInFiles], framework)} (not in the checkpoint ` +
        "files, though the engine held them)",
    );
  }
  if (filesDiffer.size > 0) {
    parts.push(
      `the checkpoint files differ from the engine's saved state in ${
        componentList([...filesDiffer], framework)
      }`,
    );
  }
  return `The checkpoint is wrong, not its load: ${parts.join("; ")}${tensorSuffix(saves)}`;
}

/**
 * `; resume-x loaded the state saved at step 6` (or `... loaded the params saved at step 6`) for
 * each restore check whose loaded digests equal another save's (`loaded_save`, decided by the
 * state check).
 */
export function loadedSaveNote(checks: readonly StateCheckSummary[]): string {
  return checks.flatMap((c) => {
    const text = loadedSaveText(c);
    return text === "" ? [] : [`; ${c.phase} ${text}`];
  }).join("");
}

/** `; module weights restored, fp32 master and optimizer state not` where a check shows it. */
function masterNote(checks: readonly StateCheckSummary[]): string {
  const note = checks.map(masterNotRestored).find((n) => n !== "");
  return note === undefined ? "" : ` (${note})`;
}

function saveNext(run: RootCauseInput, differing: string[]): string {
  const saves = run.state_checks.filter((s) => s.check === "save");
  const notInFiles = saves.flatMap((s) => s.not_in_files ?? []);
  if (notInFiles.length > 0) {
    return `Find why the save writes no ${notInFiles.join(", ")}: the checkpoint's files were ` +
      "read back without the engine, so the engine's own digests cannot vouch for them (for " +
      "DeepSpeed: which optimizer state save_checkpoint writes under this precision and ZeRO " +
      "stage; a load of such a checkpoint cannot restore it).";
  }
  return `Look at what the save captures for ${differing.join(", ")}: a cursor or counter read ` +
    "before or after the step it belongs to, an RNG the save itself draws from, a copy taken " +
    "from the wrong replica or rank, or a file that does not hold what the engine did.";
}

/**
 * The universal folder the converter wrote, read back, does not hold the split's saved state:
 * the converter's card, whatever the resumes from it show.
 */
function convertFindings(run: RootCauseInput): Finding[] {
  return run.state_checks.filter((s) => s.check === "convert" && s.verdict === "FAIL").map((s) => ({
    code: CAUSE_CODES.converter,
    verdict: "FAIL",
    phases: [s.phase],
    state: s.differing,
    headline: `the universal folder differs from the saved state in ${s.differing.join(", ")}`,
    title: `The universal folder ${s.phase} wrote does not hold the split's saved state: ${
      componentList(s.differing, s.framework)
    }${tensorSuffix([s])}.`,
    next: "Inspect the universal converter (ds_to_universal) for the named components: the " +
      "folder was read back without an engine, so no loader is involved yet.",
    evidence: [`${s.phase}: ${s.reason ?? s.differing.join(", ")}`],
  }));
}

/**
 * Resumes whose restored state differs from the saved one while none of their comparisons
 * FAILs: the loss does not show it (yet), the state check alone fails the run. Resumes that name
 * the same components share a card.
 */
function stateOnlyFindings(run: RootCauseInput): Finding[] {
  const failing = new Set(
    run.comparisons.filter((c) => c.verdict === "FAIL").flatMap((c) => [c.a, c.b]),
  );
  const groups = new Map<string, string[]>();
  for (const check of run.state_checks) {
    if (check.check !== undefined || check.verdict !== "FAIL" || failing.has(check.phase)) continue;
    const key = check.differing.join(", ");
    groups.set(key, [...(groups.get(key) ?? []), check.phase]);
  }
  return [...groups].map(([names, phases]) => {
    const who = phases.length === 1 ? phases[0] : `${phases.length} resumes (${phases.join(", ")})`;
    const passing = run.comparisons.filter((c) => phases.includes(c.b) && c.verdict === "PASS");
    const lanes = [...new Set(passing.map((c) => c.lane))].join(", ") || "no";
    const carried = names.split(", ").includes(GRAD_BUFFERS);
    // The resume's first step: one after the save it loaded (`from_step` with several saves).
    const loadedFrom = run.state_checks.find((s) => s.phase === phases[0] && s.check === undefined);
    const firstResumedStep = (loadedFrom?.from_step ?? run.save_at) + 1;
    return {
      code: carried ? CAUSE_CODES.gradCarryover : CAUSE_CODES.stateOnly,
      verdict: "FAIL",
      phases,
      state: names.split(", "),
      headline: `state check of ${phases[0]} names ${names}; its losses pass`,
      title: `${who}: ${
        carried
          ? `the ${gradCarryoverSentence(firstResumedStep)} The state check names`
          : "the restored state differs from the saved one"
      } (${names}${
        tensorSuffix(
          run.state_checks.filter((s) => phases.includes(s.phase) && s.check === undefined),
        )
      })${
        loadedSaveNote(run.state_checks.filter((s) => phases.includes(s.phase)))
      } while the ` +
        `losses pass (${lanes} lane): a difference the loss does not show within the window.`,
      next: carried ? GRAD_CARRYOVER_NEXT : `Restore ${names} on load as saved; the loss would ` +
        "show it later, or never on this window (one parameter, a component only a later step " +
        "reads).",
      evidence: phases.map((p) => {
        const check = run.state_checks.find((s) => s.phase === p)!;
        return `${p}: ${check.reason ?? `differs: ${check.differing.join(", ")}`}`;
      }),
    } satisfies Finding;
  });
}

/** N+1 of the failed resumes: one past the earliest save they load (`from_step`, else save_at). */
function firstResumed(
  run: RootCauseInput,
  loads: readonly StateCheckSummary[],
  failed: readonly string[],
): number {
  const starts = loads.filter((s) => failed.includes(s.phase)).map((s) =>
    s.from_step ?? run.save_at
  );
  return (starts.length > 0 ? Math.min(...starts) : run.save_at) + 1;
}

/** The drift lane's broken test, in words, after a reshard card (empty for other lanes). */
function driftLaneNote(sample: ComparisonSummary): string {
  if (sample.lane !== "drift") return "";
  const failure = sample.drift?.failure;
  if (failure !== undefined) {
    return ` Drift lane: ${driftFailureText(failure, [sample.a, sample.b])}.`;
  }
  // Missing or one-sided NaN steps: the shared lane's own sentence says which.
  return sample.reason ? ` ${sample.reason}` : "";
}

function noiseFloorFindings(run: RootCauseInput): Finding[] {
  if (run.noise_floor.identical) return [];
  return [{
    code: CAUSE_CODES.nondeterministic,
    verdict: "ABSTAIN",
    title: `The repeated baselines differ (up to ${run.noise_floor.max_rel_deviation} ` +
      "relative): exact lanes cannot judge this trainer" +
      (run.noise_floor.derived_rtol === undefined
        ? "."
        : `; tolerance lanes at the derived rtol ${stat(run.noise_floor.derived_rtol)} judge it.`),
    next: "An exact verdict needs a deterministic trainer (fixed reduction order, " +
      "deterministic kernels); until then the derived-tolerance lanes catch only bugs above " +
      "the noise.",
    evidence: [],
  }];
}

function noEvidenceFindings(run: RootCauseInput): Finding[] {
  const bothNaN = run.comparisons.filter((c) =>
    c.verdict === "ERROR" && ((c.both_non_finite ?? 0) > 0 || (c.both_missing ?? 0) > 0)
  );
  if (bothNaN.length === 0) return [];
  const nan = bothNaN.some((c) => (c.both_non_finite ?? 0) > 0);
  return [{
    code: CAUSE_CODES.noEvidence,
    verdict: "ERROR",
    comparisons: bothNaN.map((c) => c.name),
    title: `The loss is ${nan ? "NaN or infinite on" : "missing from"} both sides (${
      bothNaN.map((c) => c.name).join(", ")
    }) at some window steps: nothing diverged that the metric can show, and nothing is proven.`,
    next: nan
      ? "Find where both runs blew up (LR, overflow in bf16/fp16, a bad batch) and re-run; " +
        "this is no resume divergence."
      : "Log every window step in both runs (or narrow the window with `compare:`); " +
        "this is no resume divergence.",
    evidence: bothNaN.map((c) => `${c.name}: ${c.reason ?? ""}`),
  }];
}

/** One line per finding: the card as the console and JUnit print it. */
export function cardLines(findings: Finding[]): string[] {
  return findings.flatMap((f) => [
    `${f.verdict} [${f.code}] ${f.title}`,
    `  next: ${f.next}`,
    ...(f.log_tail ? f.log_tail.split("\n").map((l) => `  | ${l}`) : []),
  ]);
}

/**
 * The console's closing cause, e.g. `baseline~resume-native FAIL, first divergent step 21; state
 * check names rng` (README), or the failed phase and its message.
 */
export function causeLine(findings: Finding[]): string | null {
  const f = findings.find((x) => x.verdict === "FAIL") ?? findings[0];
  if (f === undefined) return null;
  return f.headline ?? f.title;
}

/** Failing comparisons with the same first step and values: one finding. */
export interface Group {
  /** First divergent step. */
  step: number | null;
  /** Comparison names. */
  members: string[];
  /** `a~b FAIL, first divergent step 21`. */
  headline: string;
  /** ` (+5 identical)` when the group has more than one member. */
  more: string;
  /** The first member. */
  sample: ComparisonSummary;
}

/** Groups failing comparisons that report the same first step and the same values there. */
export function groupFailures(failing: ComparisonSummary[]): Group[] {
  const groups = new Map<string, Group>();
  for (const c of failing) {
    const d = c.divergence;
    const key = `${c.first_divergent_step}|${d?.a}|${d?.b}|${c.metric}`;
    const g = groups.get(key);
    if (g) g.members.push(c.name);
    else {
      groups.set(key, {
        step: c.first_divergent_step,
        members: [c.name],
        headline: "",
        more: "",
        sample: c,
      });
    }
  }
  // Earliest first; at one step, groups judged against the baseline, then the largest.
  const vsBaseline = (g: Group) => g.sample.a === "baseline" ? 0 : 1;
  const out = [...groups.values()].sort((x, y) =>
    (x.step ?? Infinity) - (y.step ?? Infinity) || vsBaseline(x) - vsBaseline(y) ||
    y.members.length - x.members.length
  );
  for (const g of out) {
    g.more = g.members.length > 1 ? ` (+${g.members.length - 1} identical)` : "";
    g.headline = g.step === null
      ? `${g.members[0]} FAIL`
      : `${g.members[0]} FAIL, first divergent step ${g.step}`;
  }
  return out;
}

function groupText(g: Group): string {
  const d = g.sample.divergence;
  const values = d ? ` (a=${d.a}, b=${d.b})` : "";
  return `${g.members.length} comparison${g.members.length > 1 ? "s" : ""} first fail at step ${
    g.step ?? "—"
  }${values}: ${g.members.join(", ")}`;
}

/** Other failing comparisons named (three at most) or counted after a card's first group. */
const MAX_OTHERS_NAMED = 3;

/**
 * ` (+5 identical)` after the first group's headline, extended by the comparisons that fail
 * differently on the same card (` (+3 identical; +2 failing differently: a~b, a~c)`), so a card's
 * headline names or counts every failure it covers.
 */
function _othersNote(groups: Group[]): string {
  const identical = groups[0].members.length - 1;
  const others = groups.slice(1).flatMap((g) => g.members);
  const parts = identical > 0 ? [`+${identical} identical`] : [];
  if (others.length > 0) {
    parts.push(
      `+${others.length} failing differently` +
        (others.length <= MAX_OTHERS_NAMED ? `: ${others.join(", ")}` : ""),
    );
  }
  return parts.length > 0 ? ` (${parts.join("; ")})` : "";
}

/** A divergence of a few float32 ULPs at most: noise rather than lost state. */
function tiny(g: Group): boolean {
  const d = g.sample.divergence;
  if (!d || d.a === null || d.b === null) return false;
  return Math.abs(d.b - d.a) <= 64 * Math.abs(d.a) * Math.pow(2, -23);
}

/**
 * One finding per distinct plan-execute failure: plans whose execution on the checkpoint's bytes
 * differs from the reshard's loaded state the same way (same first slot) share a card.
 */
function planExecutionFindings(plans: NonNullable<RunSummary["plan_sync"]>): Finding[] {
  const groups = new Map<string, { policies: string[]; execution: PlanExecution }>();
  for (const plan of plans) {
    const ex = plan.execution;
    if (!ex || ex.verdict !== "FAIL") continue;
    const m = ex.mismatches[0];
    const key = m
      ? `${m.parameter}|${m.expert}|${m.kind}|${m.process}|${ex.mismatch_count}`
      : ex.reason;
    const group = groups.get(key) ?? { policies: [], execution: ex };
    group.policies.push(plan.policy);
    groups.set(key, group);
  }
  return [...groups.values()].map(({ policies, execution }) => {
    const m = execution.mismatches[0];
    const where = m
      ? `${m.parameter} · expert ${m.expert} · ${m.kind} · process ${m.process} · region ${m.region}`
      : "";
    return {
      code: CAUSE_CODES.planBytes,
      verdict: "FAIL",
      phases: [execution.phase],
      title: `The plan${policies.length > 1 ? "s" : ""} of ${policies.join(", ")}, executed on ` +
        `the checkpoint's bytes, ${
          m ? `differ${policies.length > 1 ? "" : "s"} from` : "disagree with"
        } ` +
        `what ${execution.against ?? "the reshard"} holds after its load: ${execution.reason}`,
      headline: `plan-execute ${policies.join(", ")} FAIL${where ? `: ${where}` : ""}`,
      next: "The plan addresses bytes its maps do not describe, or the reshard loads another " +
        "region: compare the planner's source map of that parameter with the placement the " +
        "checkpoint records (`autoep_layout.py --maps <tag>`), then the segments that write the slot.",
      evidence: execution.mismatches.slice(0, 5).map((x) =>
        `${x.parameter} · expert ${x.expert} · ${x.kind} · process ${x.process} · slot ${x.slot}: ${x.detail}`
      ),
    };
  });
}

function phaseFinding(phase: PhaseSummary): Finding {
  const { lines, headline } = causeLines(phase.log_tail ?? "");
  const what = phase.status === "timeout" ? "timed out" : "failed";
  return {
    code: CAUSE_CODES.phaseFailed,
    verdict: "ERROR",
    phases: [phase.name],
    title: `phase ${phase.name} ${what}: ${phase.message ?? `exit code ${phase.exit_code}`}`,
    headline: `phase ${phase.name} ${what}: ${headline ?? phase.message ?? ""}`.trim(),
    next: phase.status === "timeout"
      ? "Raise `trainer.timeout` or find where it hangs (the log tail's last line); completed " +
        "phases are reused by the next run."
      : "Read the log tail below (and phases/" + phase.name + "/stderr.log); fix and re-run — " +
        "completed phases are reused.",
    log_tail: lines.join("\n"),
    evidence: [],
  };
}

/** ` — <the tensors the checks name>` after a component list, or empty. */
function tensorSuffix(checks: readonly StateCheckSummary[]): string {
  const list = tensorList(checks);
  return list === "" ? "" : ` — ${list}`;
}

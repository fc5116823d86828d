/**
 * The detection matrix: for every fault the reference trainer offers, what the harness must
 * report when the quickstart runs with `--set trainer.args.fault=<name>` (save at step 20). The
 * docs/reference-trainer.md's table is this data; `detection_matrix_*_test.ts` assert it against real runs.
 *
 * @module
 */

/** What one fault must produce. */
export interface Detection {
  /** Fault name. */
  fault: string;
  /** A comparison that must FAIL, with the first divergent step it must report. */
  comparison: string;
  /** First divergent step of that comparison. */
  step: number;
  /** State component the state check of `statePhase` must name, if any. */
  state?: string;
  /** A tensor (`<parameter> · <kind>`) that check must name among its differing tensors. */
  tensor?: string;
  /** Phase whose state check names `state`: a resume's restore check, or `split`'s save check. */
  statePhase?: string;
  /** A diagnostic code the run must carry, if any. */
  diagnostic?: string;
  /** A phase that must fail (the converter refusing), if any. */
  failedPhase?: string;
  /** Root-cause code the card must carry (docs/parity.md, "Root-cause codes"), if any. */
  cause?: string;
  /** What the reader should take from the row. */
  note: string;
}

/** Every fault of the reference trainer and its expected detection. */
export const DETECTION_MATRIX: Detection[] = [
  {
    fault: "skip-rng-restore",
    cause: "cause-state-not-restored",
    comparison: "baseline~resume-native",
    step: 21,
    state: "rng",
    statePhase: "resume-native",
    note: "dropout masks restart: every resume diverges at the first resumed step",
  },
  {
    fault: "skip-sampler-restore",
    cause: "cause-state-not-restored",
    comparison: "baseline~resume-native",
    step: 21,
    state: "sampler",
    statePhase: "resume-native",
    note: "data order restarts: every resume diverges at the first resumed step",
  },
  {
    fault: "skip-scheduler-restore",
    cause: "cause-lr-schedule",
    comparison: "baseline~resume-native",
    step: 22,
    state: "lr_scheduler",
    statePhase: "resume-native",
    diagnostic: "lr-schedule-mismatch",
    note: "the LR of step 21 differs (pre-flight names both values); the loss follows at 22",
  },
  {
    fault: "reset-adam-step",
    cause: "cause-state-not-restored",
    comparison: "baseline~resume-native",
    step: 22,
    state: "optimizer_step",
    statePhase: "resume-native",
    note: "bias correction restarts: the first update differs, so the loss at 22",
  },
  {
    fault: "drop-exp-avg-sq",
    cause: "cause-converter",
    comparison: "baseline~resume-universal",
    step: 22,
    state: "exp_avg_sq",
    statePhase: "resume-universal",
    tensor: "layers.0.experts.w2 · expert 3 · exp_avg_sq",
    note: "the converter zeroes second moments: universal resumes only; native passes",
  },
  {
    fault: "master-from-bf16",
    cause: "cause-converter",
    comparison: "baseline~resume-universal",
    step: 22,
    state: "params",
    statePhase: "resume-universal",
    note: "fp32 master rebuilt from bf16 weights: same forward at 21, different update",
  },
  {
    fault: "mid-accumulation-save",
    cause: "cause-save-mid-accumulation",
    comparison: "baseline~resume-native",
    step: 21,
    diagnostic: "save-mid-accumulation",
    state: "sampler",
    statePhase: "split",
    note: "saved inside an accumulation window: loaded = saved, but the save check names the " +
      "sampler and RNG one micro-batch ahead; pre-flight and the loss catch it too",
  },
  {
    fault: "converter-transpose",
    cause: "cause-converter",
    comparison: "baseline~resume-universal",
    step: 21,
    state: "params",
    statePhase: "resume-universal",
    tensor: "head.weight · params",
    note: "column-split head merged as row-split: universal weights wrong from the first step",
  },
  {
    fault: "replica-drift",
    cause: "cause-phase-failed",
    comparison: "baseline~resume-native",
    step: 21,
    state: "params",
    statePhase: "resume-native",
    failedPhase: "convert",
    note: "replicas disagree on disk: native resume diverges, the converter refuses",
  },
  {
    fault: "save-perturbs-rng",
    cause: "cause-save-differs",
    comparison: "baseline~resume-native",
    step: 21,
    state: "rng",
    statePhase: "split",
    note: "saving consumed RNG: loaded = saved; the save check (saved vs the baseline at step " +
      "20) names rng and the card blames the save",
  },
  {
    fault: "cursor-saved-early",
    cause: "cause-save-differs",
    comparison: "baseline~resume-native",
    step: 21,
    state: "sampler",
    statePhase: "split",
    note: "the checkpoint's data cursor is one micro-batch early: loaded = saved; the save check " +
      "names sampler alone (the engine counters are right) and the card blames the save",
  },
  {
    fault: "param-group-lost",
    cause: "cause-state-not-restored",
    comparison: "baseline~resume-native",
    step: 22,
    state: "param_groups",
    statePhase: "resume-native",
    note: "the expert group is rebuilt with weight decay 0 on load: the restore check names " +
      "param_groups; the first update differs, so the loss at 22",
  },
  {
    fault: "carry-grads",
    cause: "cause-grad-carryover",
    comparison: "baseline~resume-native",
    step: 22,
    state: "grad_buffers",
    statePhase: "resume-native",
    note: "the loop never zeroes its gradients, the baseline too: it enters step 21 with the " +
      "gradients a fresh process lacks; every restored digest equals the saved one, the grads " +
      "events at 21 differ, the first update differs, so the loss at 22",
  },
  {
    fault: "expert-moment-one-param",
    cause: "cause-converter",
    comparison: "baseline~resume-universal",
    step: 22,
    state: "exp_avg",
    statePhase: "resume-reshard",
    tensor: "layers.0.experts.w2 · expert 1 · exp_avg",
    note: "one expert of one parameter takes another EP rank's moments on re-sliced loads: " +
      "native passes, the reshard's check names that tensor alone (and its exp_avg_sq)",
  },
];

/**
 * Subtle faults, judged on a realistic-length reshard: `experiments/reference/reshard_long.yaml`
 * (the quickstart's model, 2000 steps, save at 1000, universal reshard 4 → 2 ranks) with
 * `--set resume.reshard.args.fault=<name>`. Reduction-order drift grows to 10^5 ULPs there, so a
 * fixed rtol cannot tell these from it; the drift lane must (docs/parity.md, "The drift lane").
 */
export const SUBTLE_DETECTIONS: Detection[] = [
  {
    fault: "lr-scaled-on-resume",
    cause: "cause-reshard",
    comparison: "baseline~resume-reshard",
    step: 1002,
    note: "updates use LR × 1.001: 32–298 ULPs at N+2 where drift is ≤ 1; digests all match",
  },
  {
    fault: "weight-decay-dropped",
    cause: "cause-reshard",
    comparison: "baseline~resume-reshard",
    step: 1002,
    note: "no weight decay after the resume: early jump, and b − a stays negative (bias test)",
  },
  {
    fault: "expert-moments-wrong-rank",
    cause: "cause-reshard",
    comparison: "baseline~resume-reshard",
    step: 1002,
    state: "exp_avg",
    statePhase: "resume-reshard",
    tensor: "layers.0.experts.w2 · expert 1 · exp_avg",
    note: "EP rank 1's first expert gets EP rank 0's Adam moments: thousands of ULPs at N+2",
  },
  {
    fault: "expert-moment-one-param",
    cause: "cause-reshard",
    comparison: "baseline~resume-reshard",
    step: 1002,
    state: "exp_avg",
    statePhase: "resume-reshard",
    tensor: "layers.0.experts.w2 · expert 1 · exp_avg",
    note: "only w2's expert 1 gets EP rank 0's moments: still ~22 000 ULPs at N+2, so the loss " +
      "fails too; the check names exactly that tensor's exp_avg and exp_avg_sq",
  },
];

/**
 * One row of the detection matrix under `schedule.split: fused` (issue 37): no split phase, the
 * baseline saves at step 20 and trains on, so the save check is the baseline's (its snapshot just
 * before the save against what it saved) and the perturbation check compares its state just before
 * and just after the save.
 */
export interface FusedDetection extends Detection {
  /** False where no loss shows the fault under fused (only the checks at the save do). */
  lossCatches: boolean;
  /** A component the perturbation check (`baseline (save perturbs)`) must name, if any. */
  perturbs?: string;
}

/** How fusing changes a row: the rows not named keep their detection, `split` read as `baseline`. */
const FUSED_CHANGES: Record<string, Partial<FusedDetection>> = {
  // The save runs a micro-batch of step 21 in the baseline itself, which then trains on from it.
  "mid-accumulation-save": { perturbs: "sampler" },
  // The baseline and the checkpoint take the same extra draw: every resume matches the perturbed
  // baseline, so no loss shows it; the save check and the perturbation check do.
  "save-perturbs-rng": { lossCatches: false, perturbs: "rng", cause: "cause-save-perturbs" },
};

/** The detection matrix under `schedule.split: fused`: every fault is still caught. */
export const FUSED_DETECTION_MATRIX: FusedDetection[] = DETECTION_MATRIX.map((row) => ({
  ...row,
  statePhase: row.statePhase === "split" ? "baseline" : row.statePhase,
  lossCatches: true,
  ...FUSED_CHANGES[row.fault],
}));

/**
 * The `train` command: builds the layout, loads a checkpoint through the chosen resume loader
 * (before anything is written), then runs optimizer steps, logs step records and events to the
 * metrics sink, and saves the native checkpoint at `--save-at`. Faults act here at load time
 * (skip-*-restore, reset-adam-step, param-group-lost, expert-moment*) and save time
 * (mid-accumulation-save, replica-drift, save-perturbs-rng, cursor-saved-early).
 *
 * @module
 */

import { resolveResume, resumeLoader, saveNative, tagOf } from "./checkpoints/mod.ts";
import {
  buildLayout,
  type CommonState,
  digestState,
  Engine,
  freshSampler,
  freshScheduler,
  HYPER,
  initState,
  makeDataset,
  MODEL,
  PARAM,
  type SamplerState,
  stateFromLoaded,
  type TrainOptions,
  type TrainState,
  type UpdateTweak,
  UsageError,
} from "./model/mod.ts";
import { type MetricsSink, openMetrics } from "./metrics.ts";

/** Where progress and warnings go. */
export interface TrainIo {
  /** One progress or warning line (stderr). */
  log: (line: string) => void;
  /** One metrics line, when no metrics file is given (stdout). */
  out: (line: string) => void;
}

/** Applies the load-side faults to restored common state (what a buggy resume forgets). */
function applyLoadFault(
  common: CommonState,
  fault: string | null,
  opts: TrainOptions,
): void {
  switch (fault) {
    case "skip-rng-restore":
      common.rng = { seed: opts.seed, offset: 0 };
      break;
    case "skip-sampler-restore":
      common.sampler = freshSampler(opts.seed, MODEL.datasetSize);
      break;
    case "skip-scheduler-restore":
      common.scheduler = freshScheduler(HYPER, opts.steps);
      break;
    case "reset-adam-step":
      common.optimizerStep = 0;
      break;
    case "param-group-lost":
      // A loader that restores group 0 and rebuilds the others with the optimizer's defaults
      // (torch.optim.Adam: no weight decay): the expert group stops decaying.
      common.paramGroups = common.paramGroups.map((g, i) => i === 0 ? g : { ...g, weightDecay: 0 });
      break;
  }
}

/**
 * The optimiser departures of the subtle load-side faults: they touch no saved state, so every
 * digest matches and only the loss can tell.
 */
function updateTweak(fault: string | null): UpdateTweak {
  if (fault === "carry-grads") return { keepGrads: true };
  if (fault === "lr-scaled-on-resume") return { lrScale: 1.001 };
  if (fault === "weight-decay-dropped") return { noWeightDecay: true };
  return {};
}

/**
 * `expert-moments-wrong-rank` (every expert parameter) and `expert-moment-one-param` (`only`,
 * one parameter): after a re-sliced load (universal or plan), EP rank 1's first
 * local expert takes its Adam moments from EP rank 0's first local expert — the off-by-one-rank
 * bug of a reshard that indexes source files by the target's EP rank.
 */
function swapExpertMoments(state: TrainState, only?: string): void {
  const { layout, params } = state;
  if (layout.topology.epSize < 2) return;
  const first = (p: number) => layout.slots[p].findIndex((slot) => slot === 0);
  const [e0, e1] = [first(0), first(1)];
  if (e0 < 0 || e1 < 0 || e0 === e1) return;
  for (const spec of layout.specs) {
    if (spec.kind === "dense" || (only !== undefined && spec.name !== only)) continue;
    const ps = params.get(spec.name)!;
    const per = ps.expAvg[1].length / layout.slots[1].filter((s) => s >= 0).length;
    ps.expAvg[1].set(ps.expAvg[0].subarray(0, per), 0);
    ps.expAvgSq[1].set(ps.expAvgSq[0].subarray(0, per), 0);
  }
}

async function startState(opts: TrainOptions): Promise<{
  state: TrainState;
  loaded: { kind: string; path: string } | null;
}> {
  const layout = buildLayout(opts.topology, MODEL);
  if (opts.resumeFrom === null) {
    return { state: initState(layout, opts.seed, opts.steps), loaded: null };
  }
  const where = resolveResume(opts.resumeFrom, opts.resumeKind);
  const loader = resumeLoader(where.kind);
  const ck = await loader({ path: where.path, layout, plan: opts.plan });
  const state = stateFromLoaded(layout, ck);
  applyLoadFault(state.common, opts.fault, opts);
  if (opts.fault === "expert-moments-wrong-rank" && where.kind !== "native") {
    swapExpertMoments(state);
  }
  if (opts.fault === "expert-moment-one-param" && where.kind !== "native") {
    swapExpertMoments(state, PARAM.w2);
  }
  return { state, loaded: { kind: where.kind, path: where.path } };
}

/** Runs `train`: load (or initialise), then train, log and save. Nothing is written before loading succeeds. */
export async function runTrain(opts: TrainOptions, io: TrainIo): Promise<void> {
  const { state, loaded } = await startState(opts);
  const start = state.common.globalStep;
  if (start >= opts.stopAt) {
    throw new UsageError(
      `checkpoint is at step ${start}; --stop-at ${opts.stopAt} leaves nothing to run`,
    );
  }
  const early = opts.saveAt.find((step) => step <= start);
  if (early !== undefined) {
    throw new UsageError(`--save-at ${early} is not after the resumed step ${start}`);
  }
  // The data follow the saving run's seed (the sampler's), whatever --seed a resume passes.
  const data = makeDataset(state.common.sampler.seed, MODEL);
  // Resumed processes only: the baseline and the split stay clean whatever the fault, except a
  // training-loop bug (carry-grads) that every process has.
  const engine = new Engine(
    state,
    data,
    opts.gradAccum,
    loaded
      ? { ...updateTweak(opts.fault), lrCalibration: opts.lrScaleOnResume }
      : opts.fault === "carry-grads"
      ? updateTweak(opts.fault)
      : {},
  );
  const t = opts.topology;
  const sink: MetricsSink = openMetrics(opts.metricsFile, io.out);
  try {
    sink.write({
      event: "config",
      world_size: t.worldSize,
      ep_size: t.epSize,
      zero_stage: t.zeroStage,
      precision: t.precision,
      grad_accum: opts.gradAccum,
      steps: opts.steps,
      stop_at: opts.stopAt,
      save_at: opts.saveAt.length === 0
        ? null
        : opts.saveAt.length === 1
        ? opts.saveAt[0]
        : opts.saveAt,
      seed: opts.seed,
      resume_kind: loaded?.kind ?? null,
      fault: opts.fault,
      global_batch: MODEL.globalBatch,
      placement: t.placement,
    });
    if (loaded) {
      if (opts.progress) io.log(`loaded ${loaded.kind} checkpoint ${loaded.path} (step ${start})`);
      sink.write({
        event: "loaded",
        step: start,
        kind: loaded.kind,
        path: loaded.path,
        ...digestState(state),
      });
    }
    for (let k = start + 1; k <= opts.stopAt; k++) {
      // What step k's first micro-batch accumulates onto, where the harness compares it: the
      // baseline's step after the save point and a resume's first step.
      if (opts.digestAt.includes(k - 1) || (loaded && k === start + 1)) {
        sink.write({ event: "grads", step: k, ...engine.gradBuffers() });
      }
      while (engine.pending < opts.gradAccum) engine.runMicro();
      const rec = engine.finishStep();
      sink.write({ ...rec });
      if (opts.progress && (k === start + 1 || k % 10 === 0 || k === opts.stopAt)) {
        io.log(`step ${k}/${opts.steps} loss=${rec.loss.toFixed(6)} lr=${rec.lr.toExponential(3)}`);
      }
      // What the uninterrupted run holds where the split saves: hashing reads, draws nothing.
      if (opts.digestAt.includes(k)) {
        sink.write({ event: "snapshot", step: k, ...digestState(state) });
      }
      if (opts.saveAt.includes(k)) {
        save(state, engine, opts, sink, io);
        // A fused split (issue 37): the process that saved trains on; what it continues with
        // just after the save, for the perturbation check against the snapshot just before.
        if (opts.digestAt.includes(k)) {
          sink.write({ event: "after_save", step: k, ...digestState(state) });
        }
      }
    }
  } finally {
    sink.close();
  }
}

/** The sampler one micro-batch back (into the previous epoch when the cursor is that early). */
function rewound(state: TrainState, gradAccum: number): SamplerState {
  const s = state.common.sampler;
  let position = s.position - state.layout.model.globalBatch / gradAccum;
  let epoch = s.epoch;
  while (position < 0 && epoch > 0) {
    epoch -= 1;
    position += s.datasetSize;
  }
  return { ...s, epoch, position: Math.max(0, position) };
}

function save(
  state: TrainState,
  engine: Engine,
  opts: TrainOptions,
  sink: MetricsSink,
  io: TrainIo,
) {
  if (opts.fault === "mid-accumulation-save") {
    // The save lands after the first micro-batch of the next step: the sampler and RNG have
    // advanced, the partial gradient lives only in memory, and the tag still says step N.
    engine.runMicro();
  }
  if (opts.fault === "save-perturbs-rng") {
    // Saving draws from the running generator before its state is captured.
    state.common.rng.offset += 1;
  }
  // `cursor-saved-early`: the checkpoint takes the cursor of one micro-batch back; the running
  // state keeps the right one.
  const saved = opts.fault === "cursor-saved-early"
    ? { ...state, common: { ...state.common, sampler: rewound(state, opts.gradAccum) } }
    : state;
  const { digests, tensors } = digestState(saved);
  const path = saveNative(saved, {
    checkpointDir: opts.checkpointDir!,
    gradAccum: opts.gradAccum,
    seed: opts.seed,
    steps: opts.steps,
    perturbReplica: opts.fault === "replica-drift",
    crashHalfway: opts.crashInSave,
    warn: io.log,
  });
  sink.write({
    event: "saved",
    step: state.common.globalStep,
    tag: tagOf(state.common.globalStep),
    path,
    grad_accum: opts.gradAccum,
    micro_step: state.common.microStep,
    digests,
    tensors,
  });
  if (opts.progress) io.log(`saved ${path}`);
}

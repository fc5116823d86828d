/**
 * The injectable resume bugs. Every fault but one acts only when the process saves, converts or
 * loads, so the same `--fault` can be passed to every process of a run and the baseline stays
 * clean; `carry-grads` (site `step`) is a bug of the training loop itself, in every process.
 *
 * @module
 */

/** Where a fault acts. */
export type FaultSite = "load" | "save" | "convert" | "step";

/** One fault: its name, where it acts and what it breaks. */
export interface FaultInfo {
  /** The `--fault` name. */
  name: string;
  /** Process step where it acts. */
  site: FaultSite;
  /** The resume bug it models. */
  breaks: string;
}

/** Every fault the trainer and converter accept. */
export const FAULTS: readonly FaultInfo[] = Object.freeze([
  { name: "skip-rng-restore", site: "load", breaks: "dropout RNG counter not restored" },
  { name: "skip-sampler-restore", site: "load", breaks: "sampler restarts at epoch 0" },
  { name: "skip-scheduler-restore", site: "load", breaks: "LR schedule restarts at warm-up" },
  { name: "reset-adam-step", site: "load", breaks: "Adam step counter reset to 0" },
  { name: "drop-exp-avg-sq", site: "convert", breaks: "converter writes zero exp_avg_sq" },
  { name: "master-from-bf16", site: "convert", breaks: "universal fp32 rebuilt from bf16 weights" },
  { name: "mid-accumulation-save", site: "save", breaks: "save inside an accumulation window" },
  { name: "converter-transpose", site: "convert", breaks: "column-split param merged as rows" },
  { name: "replica-drift", site: "save", breaks: "one expert replica perturbed in the files" },
  { name: "save-perturbs-rng", site: "save", breaks: "saving draws from the running RNG" },
  {
    name: "cursor-saved-early",
    site: "save",
    breaks: "the checkpoint records the data cursor one micro-batch early",
  },
  {
    name: "param-group-lost",
    site: "load",
    breaks: "the expert param group is rebuilt with default weight decay 0 on load",
  },
  {
    name: "carry-grads",
    site: "step",
    breaks: "the step never zeroes its gradient buffers: each step adds onto the earlier ones",
  },
  // Subtle faults: small enough that a reshard's reduction-order drift could hide them.
  { name: "lr-scaled-on-resume", site: "load", breaks: "resumed updates use LR x 1.001" },
  { name: "weight-decay-dropped", site: "load", breaks: "resumed updates skip weight decay" },
  {
    name: "expert-moments-wrong-rank",
    site: "load",
    breaks: "after a reshard, one expert's Adam moments come from another EP rank",
  },
  {
    name: "expert-moment-one-param",
    site: "load",
    breaks: "after a reshard, one expert of w2 alone takes its Adam moments from another EP rank",
  },
]);

/** Names accepted by `--fault`. */
export const FAULT_NAMES: readonly string[] = FAULTS.map((f) => f.name);

/** True when `name` is a known fault. */
export function isFault(name: string): boolean {
  return FAULT_NAMES.includes(name);
}

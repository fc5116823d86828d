/**
 * State components in the framework's own words. A trainer's events may say which framework wrote
 * them (`framework: "deepspeed"`, as `parity_hooks.deepspeed` does); cards, reports and JUnit then
 * name a component as that framework's users know it: DeepSpeed's `params` digest hashes the fp32
 * master, `module_weights` the bf16/fp16 weights the module trains with. A few components mean
 * the same in every framework and are always said in words (`grad_buffers`).
 *
 * @module
 */

import type { StateCheckSummary } from "../../types/mod.ts";

/** Per framework: component -> what it is in that framework's words. */
const COMPONENT_WORDS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  deepspeed: {
    params: "the fp32 master",
    module_weights: "the bf16/fp16 module weights",
  },
};

/** Components said in the same words whatever the framework. */
export const COMMON_WORDS: Readonly<Record<string, string>> = {
  grad_buffers: "the gradients carried into the first resumed step",
};

/** The optimizer-held components (what "optimizer state" covers in a sentence). */
const OPTIMIZER_STATE = new Set(["exp_avg", "exp_avg_sq", "optimizer_step"]);

/**
 * `params (the fp32 master)` under DeepSpeed, `grad_buffers (the gradients carried into the first
 * resumed step)` everywhere; the bare name elsewhere.
 */
export function componentLabel(name: string, framework: string | undefined): string {
  const words = (framework === undefined ? undefined : COMPONENT_WORDS[framework]?.[name]) ??
    COMMON_WORDS[name];
  return words === undefined ? name : `${name} (${words})`;
}

/** Every name of `names` labelled by {@link componentLabel}, comma-separated. */
export function componentList(names: readonly string[], framework: string | undefined): string {
  return names.map((n) => componentLabel(n, framework)).join(", ");
}

/** The framework the first check that names one names. */
export function frameworkOf(checks: readonly StateCheckSummary[]): string | undefined {
  return checks.find((c) => c.framework !== undefined)?.framework;
}

/**
 * DeepSpeed's telling pattern: the fp32 master and optimizer state differ while the module
 * weights were compared and are equal — "module weights restored, fp32 master and optimizer state
 * not" (a load that restored the bf16 module but never refreshed the master; DeepSpeed PR #7786).
 * Empty otherwise.
 */
export function masterNotRestored(check: StateCheckSummary): string {
  if (check.framework !== "deepspeed") return "";
  const differing = new Set(check.differing);
  const moduleEqual = (check.compared ?? []).includes("module_weights") &&
    !differing.has("module_weights");
  const optimizer = [...differing].some((d) => OPTIMIZER_STATE.has(d));
  if (!moduleEqual || !differing.has("params") || !optimizer) return "";
  return "module weights restored, fp32 master and optimizer state not";
}

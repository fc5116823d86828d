/**
 * Plan sync: affine map v1 (DeepSpeed-compatible JSON), deep map validation, the batch transfer
 * planner `planTransfers` with replica policies, plan files, and the independent plan verifier.
 *
 * ```ts
 * import { buildPlanFile, getReplicaPolicy, planTransfers, verifyPlan } from "./mod.ts";
 * const pairs = { "layers.0.w1": { source, target } };
 * const plans = planTransfers(pairs, { policy: getReplicaPolicy("balanced"), elementSize: 4 });
 * const file = buildPlanFile(plans, { policy: "balanced", pairs });
 * const verdict = verifyPlan(file, { execute: true });
 * ```
 *
 * @module
 */

export * from "./affine_errors.ts";
export * from "./map.ts";
export * from "./validate_map.ts";
export * from "./plan_transfers.ts";
export * from "./policies.ts";
export * from "./plan_file.ts";
export * from "./verify.ts";
export * from "./second_opinion.ts";
export { formatVerdict } from "./format_verdict.ts";

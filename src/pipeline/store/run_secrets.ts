/**
 * What a run teaches the harness-wide redaction policy before it writes anything, and the
 * redacted forms of the experiment written as `experiment.resolved.yaml` and of the plan written
 * as `plan.json` (docs/security.md).
 *
 * @module
 */

import type { Experiment } from "../../experiment/mod.ts";
import { HARNESS_REDACTION, redactEnv } from "../../process/mod.ts";
import type { PhaseSpec, ResolvedPlan } from "../../types/mod.ts";

/**
 * Adds the secrets of a run to {@linkcode HARNESS_REDACTION}: the secret-named variables of the
 * harness's own environment that the experiment references as `${env.X}` (the only way they
 * reach a child's argv or environment), and the secret-named variables, URL passwords and
 * secret flags of every phase's expanded environment and argv.
 */
export function learnRunSecrets(
  exp: Experiment,
  phases: readonly PhaseSpec[],
  harnessEnv: Readonly<Record<string, string>>,
): void {
  const referenced = new Set(
    [...JSON.stringify(exp).matchAll(/\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]),
  );
  HARNESS_REDACTION.addEnv(
    Object.fromEntries(Object.entries(harnessEnv).filter(([name]) => referenced.has(name))),
  );
  for (const env of experimentEnvs(exp)) HARNESS_REDACTION.addEnv(env);
  for (const spec of phases) {
    HARNESS_REDACTION.addEnv(spec.env);
    HARNESS_REDACTION.addArgv(spec.argv);
  }
}

/**
 * A copy of `exp` fit for a results file: every secret-named variable of `trainer.env`,
 * `converter.env`, `planner.env` and `resume.*.env` replaced whatever its length, then every
 * string passed through the harness-wide policy.
 */
export function redactedExperiment(exp: Experiment): Experiment {
  const copy = structuredClone(exp) as Experiment & Record<string, unknown>;
  for (
    const holder of [
      copy.trainer,
      copy.converter,
      copy.planner,
      ...Object.values(copy.resume ?? {}),
    ]
  ) {
    const owner = holder as { env?: Record<string, string> } | undefined;
    if (owner?.env) owner.env = redactEnv(owner.env);
  }
  return HARNESS_REDACTION.redactValue(copy);
}

/**
 * A copy of `plan` fit for a results file: every secret-named variable of each phase's
 * environment (and of the cache's view of it) replaced whatever its length, then every string
 * passed through the harness-wide policy.
 */
export function redactedPlan(plan: ResolvedPlan): ResolvedPlan {
  const copy = structuredClone(plan);
  for (const spec of copy.phases) {
    spec.env = redactEnv(spec.env);
    spec.keyed.env = redactEnv(spec.keyed.env);
  }
  return HARNESS_REDACTION.redactValue(copy);
}

function experimentEnvs(exp: Experiment): Record<string, string>[] {
  const holders = [exp.trainer, exp.converter, exp.planner, ...Object.values(exp.resume ?? {})];
  return holders.flatMap((h) => {
    const env = (h as { env?: Record<string, string> } | undefined)?.env;
    return env ? [env] : [];
  });
}

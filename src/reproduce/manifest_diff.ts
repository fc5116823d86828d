/**
 * Every environment difference two manifests show: harness version and git state, Deno and OS,
 * CPU, framework versions, the variables that matter, the digest and git state of every code
 * input, and each child's argv and (already redacted) environment. Run-folder paths are
 * abstracted so two runs of the same plan compare equal.
 *
 * @module
 */

import type { Manifest } from "../pipeline/store/mod.ts";

/** One field that differs. */
export interface EnvironmentDifference {
  /** Dotted field, e.g. `code.trainer.digest`, `children.baseline.env.SCALE`. */
  field: string;
  /** Value in the stored run (`(not recorded)` when absent). */
  stored: string;
  /** Value in the rerun. */
  rerun: string;
}

/** Marks a field one manifest lacks (older harness, or a phase that never launched). */
const NOT_RECORDED = "(not recorded)";

/** The comparable fields of a manifest, flattened, with `runDir` replaced by `<run>`. */
function manifestFacts(manifest: Manifest, runDir: string): Map<string, string> {
  const out = new Map<string, string>();
  const put = (field: string, value: unknown) => {
    if (value === undefined) return;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    out.set(field, text.replaceAll(runDir, "<run>"));
  };
  put("harness_version", manifest.harness_version);
  put("git.commit", manifest.git?.commit);
  put("git.dirty", manifest.git?.dirty);
  put("deno", manifest.deno);
  put("os", manifest.os);
  const env = manifest.environment;
  if (env) {
    put("cpu_model", env.cpu_model);
    put("cpu_count", env.cpu_count);
    put("hardware_class", env.hardware_class);
    for (const [k, v] of Object.entries(env.frameworks)) put(`frameworks.${k}`, v);
    for (const [k, v] of Object.entries(env.variables)) put(`variables.${k}`, v);
    for (const [tool, code] of Object.entries(env.code)) {
      put(`code.${tool}.digest`, code.digest);
      for (const [input, git] of Object.entries(code.git)) {
        put(`code.${tool}.git[${input}].commit`, git.commit);
        put(`code.${tool}.git[${input}].dirty`, git.dirty);
      }
    }
  }
  // The last attempt of each phase stands for it.
  for (const child of manifest.children ?? []) {
    put(`children.${child.phase}.argv`, child.argv.join(" "));
    put(`children.${child.phase}.cwd`, child.cwd);
    for (const [k, v] of Object.entries(child.env)) put(`children.${child.phase}.env.${k}`, v);
  }
  return out;
}

/** Differences between a stored run's manifest and its rerun's, sorted by field. */
export function diffManifests(
  stored: { manifest: Manifest; runDir: string },
  rerun: { manifest: Manifest; runDir: string },
): EnvironmentDifference[] {
  const a = manifestFacts(stored.manifest, stored.runDir);
  const b = manifestFacts(rerun.manifest, rerun.runDir);
  // A phase the stored run reused from the cache launched no child there: nothing to compare.
  const launched = (m: Manifest) => new Set((m.children ?? []).map((c) => c.phase));
  const [inA, inB] = [launched(stored.manifest), launched(rerun.manifest)];
  const comparable = (field: string) => {
    const phase = /^children\.([^.]+)\./.exec(field)?.[1];
    return phase === undefined || (inA.has(phase) && inB.has(phase));
  };
  const fields = [...new Set([...a.keys(), ...b.keys()])].sort().filter(comparable);
  return fields
    .filter((f) => a.get(f) !== b.get(f))
    .map((field) => ({
      field,
      stored: a.get(field) ?? NOT_RECORDED,
      rerun: b.get(field) ?? NOT_RECORDED,
    }));
}

/**
 * Resume loaders: each turns a checkpoint path into the **target** topology's per-EP-rank
 * shards plus the common state ({@link LoadedCheckpoint}). `native` reads the saved shards
 * (same topology only), `universal` slices full tensors through the target maps, `plan`
 * executes a verified transfer plan on a native checkpoint's shards (`plan_resume.ts`);
 * further kinds plug in with {@link registerResumeLoader}.
 *
 * @module
 */

import { join } from "node:path";
import { loadNative } from "./checkpoint.ts";
import {
  CheckpointError,
  type LoadedCheckpoint,
  type ResumeRequest,
  UsageError,
} from "../model/mod.ts";
import { isDir, isFile, NATIVE_MARKER, UNIVERSAL_MARKER } from "./files.ts";
import { loadThroughPlan } from "./plan_resume.ts";
import { loadUniversal } from "./universal.ts";

/** Produces the target topology's shards from a checkpoint. */
export type ResumeLoader = (request: ResumeRequest) => LoadedCheckpoint | Promise<LoadedCheckpoint>;

const LOADERS = new Map<string, ResumeLoader>([
  ["native", (r) => loadNative(r.path, r.layout)],
  ["universal", (r) => loadUniversal(r.path, r.layout)],
  ["plan", loadThroughPlan],
]);

/** Registers (or replaces) the loader of a resume kind, e.g. `plan`. */
export function registerResumeLoader(kind: string, loader: ResumeLoader): void {
  LOADERS.set(kind, loader);
}

/** Kinds with a registered loader. */
export function resumeKinds(): string[] {
  return [...LOADERS.keys()];
}

/** The loader of a kind; a usage error names the kinds available. */
export function resumeLoader(kind: string): ResumeLoader {
  const loader = LOADERS.get(kind);
  if (!loader) {
    throw new UsageError(
      `--resume-kind ${kind} is not available (known: ${resumeKinds().join(", ")})`,
    );
  }
  return loader;
}

/**
 * Resolves a resume path: a checkpoint root is followed through `latest` (native) or
 * `latest_universal`; a missing kind is detected from the folder's completion marker.
 */
export function resolveResume(path: string, kind: string | null): { path: string; kind: string } {
  if (!isDir(path)) throw new CheckpointError(`checkpoint folder ${path} does not exist`);
  let folder = path;
  const hasMarker = (f: string) =>
    isFile(join(f, NATIVE_MARKER)) || isFile(join(f, UNIVERSAL_MARKER));
  if (!hasMarker(folder)) {
    const pointer = kind === "universal"
      ? "latest_universal"
      : kind === "native"
      ? "latest"
      : isFile(join(folder, "latest"))
      ? "latest"
      : "latest_universal";
    if (isFile(join(folder, pointer))) {
      folder = join(folder, Deno.readTextFileSync(join(folder, pointer)).trim());
    }
  }
  const detected = isFile(join(folder, UNIVERSAL_MARKER))
    ? "universal"
    : isFile(join(folder, NATIVE_MARKER))
    ? "native"
    : null;
  // Other kinds (a plan executor) read native folders their own way.
  const builtIn = kind === "native" || kind === "universal";
  if (builtIn && detected !== null && kind !== detected) {
    throw new CheckpointError(
      `${folder} is a ${detected} checkpoint, not ${kind} (pass --resume-kind ${detected}${
        detected === "native" ? " or convert it first" : ""
      })`,
    );
  }
  return { path: folder, kind: kind ?? detected ?? "native" };
}

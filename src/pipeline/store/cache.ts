/**
 * The phase cache. A phase's key hashes everything that determines its output: its resolved
 * argv and environment with paths abstracted (secret-looking variables left out), the keys of
 * the phases it consumes, the schedule and seed, and the digest of its declared code inputs. A
 * completed phase with the same key in any earlier run of the experiment is reused by
 * reference — its metrics, logs and checkpoints stay where they are, nothing is copied.
 *
 * @module
 */

import { join, relative, resolve } from "node:path";
import { isSecretName, reapGroup } from "../../process/mod.ts";
import { LAUNCH_RECORD_FILES, LOCAL_FILES } from "../../executors/mod.ts";
import { canonicalJson } from "../../experiment/mod.ts";
import { PROJECT_DIR } from "../../presets/mod.ts";
import type { PhaseSpec, PhaseSummary } from "../../types/mod.ts";
import { expandEnv } from "./expand_env.ts";
import { sha256Hex, sha256HexSync } from "./sha256.ts";
import { type OutputHashes, outputsChanged } from "./output_hashes.ts";
import {
  checkpointChanged,
  type CheckpointHashes,
  type CheckpointVerifyMode,
} from "./checkpoint_hashes.ts";
import { pathExists, readJsonIfExists } from "./run_store.ts";

/** Bump when the meaning of a key changes, so old entries stop matching. */
const CACHE_FORMAT = 2;

/** What a completed phase left behind, as recorded in its phase.json. */
export interface PhaseRecord extends PhaseSummary {
  /** Where its artifacts are. */
  outputs?: {
    metrics?: string;
    metrics_source?: string;
    checkpoint_dir?: string;
    checkpoint_tag?: string;
    checkpoint_marker?: string;
    universal?: string;
    plan?: string;
    state?: string;
    dir?: string;
  };
  /** Set by `gc` / `keep_checkpoints` when the phase's checkpoints were deleted. */
  artifacts_pruned?: boolean;
  /** Content hashes of its metrics and plan outputs, recorded at completion. */
  output_hashes?: OutputHashes;
  /** Split and convert: content hashes of every checkpoint file, recorded at completion. */
  checkpoint_hashes?: CheckpointHashes;
}

/** A reusable earlier phase. */
export interface CacheHit {
  /**
   * The phase completed, but the checkpoint, universal folder or plan it produced is gone
   * (pruned by `gc` or `keep_checkpoints`): reusable only when nothing has to read it.
   */
  artifactsMissing?: boolean;
  /** The run folder that produced the artifacts. */
  runDir: string;
  /** Its phase folder. */
  phaseDir: string;
  /** Its phase.json. */
  record: PhaseRecord;
}

/** The argv with the machine-specific prefixes (Deno binary, project folder) abstracted. */
function abstractArgv(argv: string[]): string[] {
  return argv.map((a) => a === Deno.execPath() ? "<deno>" : a.replaceAll(PROJECT_DIR, "<project>"));
}

/**
 * `path:sha256` of a file, or of every file under a folder in sorted order, and whether the walk
 * completed: an entry that cannot be read ends it there. Read synchronously: nothing else can
 * start before the cache keys are known, and a code folder's files are small, so a blocking walk
 * takes a fraction of the time a round trip per file does.
 */
function hashTree(path: string): { parts: string[]; complete: boolean } {
  const parts: string[] = [];
  const walk = (path: string): boolean => {
    try {
      if (Deno.statSync(path).isFile) {
        parts.push(`${path}:${sha256HexSync(Deno.readFileSync(path))}`);
        return true;
      }
      const names: string[] = [];
      for (const e of Deno.readDirSync(path)) {
        if (e.name === "node_modules" || e.name.startsWith(".")) continue;
        if (e.isFile && /_test\.ts$/.test(e.name)) continue; // tests do not change a trainer's output
        names.push(e.name);
      }
      return names.sort().every((name) => walk(join(path, name)));
    } catch {
      return false;
    }
  };
  const complete = walk(path);
  return { parts, complete };
}

/**
 * Digest of declared code inputs: a file or folder (content hash), or `!program args...` whose
 * standard output joins the key (split on spaces, never run through a shell; `$NAME` and
 * `${env.NAME}` are expanded from the harness environment). A missing path or a failing
 * command is part of the digest too, so it cannot silently match a working one.
 */
export async function codeInputsDigest(
  inputs: readonly string[],
  baseDir: string,
  env: Record<string, string>,
): Promise<string> {
  const parts: string[] = [];
  for (const input of inputs) {
    if (input.startsWith("!")) {
      const argv = expandEnv(input.slice(1), env).trim().split(/\s+/);
      try {
        const out = await new Deno.Command(argv[0], {
          args: argv.slice(1),
          cwd: baseDir,
          stdout: "piped",
          stderr: "null",
        })
          .output();
        parts.push(`${input}=>${out.code}:${new TextDecoder().decode(out.stdout)}`);
      } catch (e) {
        parts.push(`${input}=>error:${e instanceof Error ? e.name : e}`);
      }
      continue;
    }
    const path = resolve(baseDir, expandEnv(input, env));
    const tree = hashTree(path);
    const found = tree.complete ? tree.parts : [...tree.parts, `${path}:missing`];
    parts.push(...found.map((f) => f.replace(path, input)));
  }
  return await sha256Hex(parts.join("\n"));
}

/** Code-input digests by input set, shared by the cache keys and the manifest of one run. */
export type CodeDigests = Map<string, Promise<string>>;

/**
 * {@linkcode codeInputsDigest} of `inputs`, computed once per `digests`: a preset's trainer,
 * converter and planner share their code, and the keys and the manifest both need it.
 */
export function sharedCodeDigest(
  digests: CodeDigests,
  inputs: readonly string[],
  baseDir: string,
  env: Record<string, string>,
): Promise<string> {
  const id = inputs.join("\0");
  let digest = digests.get(id);
  if (!digest) digests.set(id, digest = codeInputsDigest(inputs, baseDir, env));
  return digest;
}

/** A variable of a phase's environment that its cache key leaves out, and why. */
export interface KeyLeftOut {
  /** Variable name. */
  name: string;
  /** Why it is not in the key. */
  reason: string;
}

/** Why a secret-named variable is not in the cache key (shown by `parity plan`). */
export const SECRET_LEFT_OUT_REASON =
  "secret-named: its value is never hashed or written, so a rotated secret re-runs nothing";

/**
 * The environment a phase's cache key hashes, and the variables it leaves out with the reason:
 * the one place that decides it, read by {@linkcode phaseCacheKey} and by `parity plan`.
 */
export function cacheKeyEnv(
  env: Readonly<Record<string, string>>,
): { env: Record<string, string>; leftOut: KeyLeftOut[] } {
  const kept: Record<string, string> = {};
  const leftOut: KeyLeftOut[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (isSecretName(name)) leftOut.push({ name, reason: SECRET_LEFT_OUT_REASON });
    else kept[name] = value;
  }
  return { env: kept, leftOut };
}

/** The cache key of a phase: its keyed command, metrics reader, producers' keys and code. */
export async function phaseCacheKey(
  spec: PhaseSpec,
  consumedKeys: string[],
  codeDigest: string,
): Promise<string> {
  const keptEnv = cacheKeyEnv(spec.keyed.env).env;
  // Which metric is the loss (`metrics.loss`) is how the output is read, not what the phase
  // produces: naming it re-runs nothing, like a tolerance.
  const { path: _path, loss: _loss, ...reader } = spec.metrics ?? { path: "" };
  const material = {
    format: CACHE_FORMAT,
    deno: Deno.version.deno,
    phase: spec.name,
    role: spec.role,
    tool: spec.tool,
    argv: abstractArgv(spec.keyed.argv),
    env: keptEnv,
    metrics: spec.metrics ? reader : null,
    consumes: consumedKeys,
    code: codeDigest,
    // A planner reads its target topology from a file the harness writes (`${target}`): what
    // the file holds is an input, though its path is not. Absent elsewhere, so no other key moves.
    ...(spec.target === undefined ? {} : { target: spec.target }),
    // The save a resume loads (or the converter converts) with several saves: its tag's path is a
    // token in the keyed command, so the step is named here. Absent with one save.
    ...(spec.fromStep === undefined ? {} : { from_step: spec.fromStep }),
  };
  return (await sha256Hex(canonicalJson(material))).slice(0, 32);
}

/** Whether the artifacts a completed phase's consumers need are still there. */
async function artifactsPresent(record: PhaseRecord): Promise<boolean> {
  const o = record.outputs ?? {};
  if (record.role === "split" || record.role === "convert" || record.role === "plan") {
    if (record.artifacts_pruned) return false;
  }
  // A fused split's baseline saves too: its checkpoint must be there as well as its metrics.
  if (record.role === "baseline" && o.checkpoint_tag) {
    const marker = o.checkpoint_marker;
    if (!(await pathExists(marker ? join(o.checkpoint_tag, marker) : o.checkpoint_tag))) {
      return false;
    }
  }
  if (record.role === "split") {
    const tag = o.checkpoint_tag;
    if (!tag) return false;
    const marker = o.checkpoint_marker;
    return await pathExists(marker ? join(tag, marker) : tag);
  }
  if (record.role === "convert") return await pathExists(o.universal);
  if (record.role === "plan") return await pathExists(o.plan);
  if (record.role === "execute") return await pathExists(o.state);
  return await pathExists(o.metrics);
}

/** Why a split's or convert's checkpoint cannot be trusted, or null when it can. */
export async function checkpointProblem(
  phaseDir: string,
  record: PhaseRecord,
  verify: CheckpointVerifyMode,
): Promise<string | null> {
  // A fused split's baseline holds the checkpoint the resumes read: verified like a split's.
  const fusedSaver = record.role === "baseline" && record.outputs?.checkpoint_tag !== undefined;
  if (!PRUNABLE.has(record.role) && !fusedSaver) return null;
  if (record.checkpoint_hashes === undefined) return "its phase.json records no checkpoint hashes";
  return await checkpointChanged(phaseDir, record.checkpoint_hashes, verify);
}

/** Roles whose checkpoints `gc` and `keep_checkpoints` may delete while other phases are cached. */
const PRUNABLE = new Set(["split", "convert"]);

/**
 * Finds the newest earlier completed phase with the same key among the experiment's `runs` (run
 * folders oldest first, as run_store.ts's `listRuns` gives them), preferring one whose artifacts are
 * all there; a split or convert whose checkpoint was pruned comes back marked `artifactsMissing`
 * when no complete one exists. A phase folder without its
 * completion marker (phase.json, written last) never matches, nor does one whose outputs or
 * checkpoint files no longer match the content hashes recorded at completion (checked as
 * `verify` says: {@linkcode checkpointChanged}); `onRejected` hears why.
 */
export async function findCachedPhase(
  runs: readonly string[],
  phase: string,
  key: string,
  currentRunDir: string,
  onRejected?: (runDir: string, reason: string) => void,
  verify: CheckpointVerifyMode = "auto",
): Promise<CacheHit | undefined> {
  let pruned: CacheHit | undefined;
  for await (
    const { runDir, phaseDir, record } of _earlierRecords(runs, phase, key, currentRunDir)
  ) {
    if (record.status !== "ok") continue;
    const source = record.source_run ?? runDir;
    const hit: CacheHit = {
      runDir: source,
      phaseDir: record.source_run ? join(source, "phases", phase) : phaseDir,
      record,
    };
    const changed = await outputsChanged(hit.phaseDir, record.outputs, record.output_hashes);
    if (changed !== null) {
      onRejected?.(runDir, changed);
      continue;
    }
    if (await artifactsPresent(record)) {
      const damaged = await checkpointProblem(hit.phaseDir, record, verify);
      if (damaged === null) return hit;
      onRejected?.(runDir, damaged);
      continue;
    }
    if (!pruned && PRUNABLE.has(record.role)) pruned = { ...hit, artifactsMissing: true };
  }
  return pruned;
}

/**
 * The newest earlier phase with key `key` that ended failed or timed out (an imported offline
 * run's), for `--no-launch`: judged as it ended, never launched again. Same lookup as
 * {@linkcode findCachedPhase} ({@linkcode _earlierRecords}), without the output checks (a failed
 * phase's outputs judge nothing).
 */
export async function findFailedPhase(
  runs: readonly string[],
  phase: string,
  key: string,
  currentRunDir: string,
): Promise<CacheHit | undefined> {
  for await (const hit of _earlierRecords(runs, phase, key, currentRunDir)) {
    if (hit.record.status === "failed" || hit.record.status === "timeout") return hit;
  }
  return undefined;
}

/**
 * The completed records of `phase` with key `key` in `runs`, newest first, `currentRunDir`
 * left out; a folder without a readable completion marker (phase.json) is not complete.
 */
async function* _earlierRecords(
  runs: readonly string[],
  phase: string,
  key: string,
  currentRunDir: string,
): AsyncGenerator<CacheHit> {
  for (const runDir of [...runs].reverse()) {
    if (resolve(runDir) === resolve(currentRunDir)) continue;
    const phaseDir = join(runDir, "phases", phase);
    const record = await readJsonIfExists<PhaseRecord>(join(phaseDir, "phase.json"))
      .catch(() => undefined);
    if (record?.cache_key === key) yield { runDir, phaseDir, record };
  }
}

/** File in a phase folder naming the pid (and process group) of its running child. */
export const CHILD_PID_FILE: string = LOCAL_FILES.pid;

/**
 * Cleans up after a harness that died mid-phase (killed, crashed, rebooted): phase folders of
 * `earlierRuns` (the experiment's run folders but the current one) without a completion marker have their child's process group reaped if it still
 * runs (identified by its `PARITY_RUN_DIR`), and are moved aside as `phases/<name>.incomplete`,
 * kept for diagnosis and never reused. Returns one note per action. Call only while holding the
 * experiment's lock, so no live run's phase is touched.
 */
export async function quarantineIncomplete(
  experimentDir: string,
  earlierRuns: readonly string[],
): Promise<string[]> {
  const moved: string[] = [];
  for (const runDir of earlierRuns) {
    const phasesDir = join(runDir, "phases");
    let entries: Deno.DirEntry[] = [];
    try {
      entries = await Array.fromAsync(Deno.readDir(phasesDir));
    } catch {
      continue;
    }
    for (const e of entries) {
      if (!e.isDirectory || e.name.includes(".incomplete")) continue;
      const dir = join(phasesDir, e.name);
      if (await pathExists(join(dir, "phase.json"))) continue;
      // A Slurm job outlives its harness: the next run attaches to it (pipeline/running/slurm_phase.ts).
      const launched = await Promise.all(LAUNCH_RECORD_FILES.map((f) => pathExists(join(dir, f))));
      if (launched.some(Boolean)) continue;
      const pid = Number(
        (await Deno.readTextFile(join(dir, CHILD_PID_FILE)).catch(() => "")).trim(),
      );
      if (Number.isInteger(pid) && pid > 1 && (await reapGroup(pid, "PARITY_RUN_DIR", dir))) {
        moved.push(
          `killed process group ${pid} left running by a harness that died (${
            relative(experimentDir, dir)
          })`,
        );
      }
      const target = `${dir}.incomplete`;
      if (await pathExists(target)) continue;
      await Deno.rename(dir, target);
      moved.push(`moved aside an incomplete phase folder: ${relative(experimentDir, target)}`);
    }
  }
  return moved;
}

/**
 * Cache keys of every phase, in graph order (a consumer's key includes its producers'). Keys
 * never depend on where the run folder is, since the specs' keyed commands abstract its paths.
 * `digests` lets the manifest reuse the code digests.
 */
export async function computeKeys(
  specs: readonly PhaseSpec[],
  baseDir: string,
  harnessEnv: Record<string, string>,
  digests: CodeDigests = new Map(),
): Promise<Map<string, string>> {
  const keys = new Map<string, string>();
  for (const spec of specs) {
    const digest = await sharedCodeDigest(digests, spec.codeInputs, baseDir, harnessEnv);
    const consumed = spec.consumes.map((name) => keys.get(name) ?? "");
    keys.set(spec.name, await phaseCacheKey(spec, consumed, digest));
  }
  return keys;
}

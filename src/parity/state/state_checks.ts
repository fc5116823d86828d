/**
 * Restored-state checks: a resume phase's `loaded` event digests against the split phase's
 * `saved` digests, and the save check: those `saved` digests against the baseline's `snapshot`
 * at the same step, per component (`params`, `exp_avg_sq`, `rng`, ...). Digests hash the logical,
 * unsharded state, so they compare across topologies. No digests on either side is "not
 * available" (N/A), never a pass.
 *
 * @module
 */

import { type EventRecord, type MetricSeries, TENSORS_ERROR_FIELD } from "../../metrics/mod.ts";
import type { LoadedSave, StateCheckSummary } from "../../types/mod.ts";

/** The event named `name` carrying a `digests` object, preferring one at `step`. */
export function findDigestEvent(
  series: MetricSeries | undefined,
  name: "saved" | "loaded" | "snapshot" | "files" | "after_save" | "grads",
  step?: number,
): EventRecord | undefined {
  if (series === undefined) return undefined;
  const candidates = series.events.filter((e) => e.event === name && isDigestMap(e.fields.digests));
  if (candidates.length === 0) return undefined;
  const atStep = candidates.find((e) => e.step === step);
  if (atStep !== undefined) return atStep;
  return name === "saved" ? candidates[candidates.length - 1] : candidates[0];
}

function isDigestMap(x: unknown): x is Record<string, unknown> {
  return x !== null && typeof x === "object" && !Array.isArray(x) &&
    Object.keys(x as object).length > 0;
}

/**
 * Compares `resume`'s loaded digests with `split`'s saved digests at `fromStep` (the step the
 * resume loads). FAIL names the differing components (and `step` when the loaded step is not the
 * saved one); components on one side only make it ERROR (`missing`); no digests on a side makes
 * it N/A. When the split saved more than once and the loaded digests equal another save's in
 * differing components, `loaded_save` names that save (see {@link loadedOtherSave}).
 */
export function checkRestoredState(
  phase: string,
  split: MetricSeries | undefined,
  resume: MetricSeries | undefined,
  fromStep?: number,
): StateCheckSummary {
  const reference = findDigestEvent(split, "saved", fromStep);
  const candidate = findDigestEvent(resume, "loaded", fromStep);
  const summary = _compareDigests(phase, undefined, {
    reference,
    candidate,
    referenceSide: "the split's saved event",
    candidateSide: "this phase's loaded event",
    steps: ["loaded", "saved"],
    differs: "restored state differs from the saved state",
    matches: "match the saved digests",
    unavailable: "so the restored state cannot be checked",
  });
  if (reference === undefined || candidate === undefined || summary.verdict !== "FAIL") {
    return summary;
  }
  const saves = (split?.events ?? []).filter((e) =>
    e.event === "saved" && isDigestMap(e.fields.digests)
  );
  const other = loadedOtherSave(reference, candidate, saves, summary.differing);
  if (other === undefined) return summary;
  const said = loadedSaveText({ loaded_save: other, from_step: reference.step ?? undefined });
  return { ...summary, loaded_save: other, reason: `${summary.reason} It ${said}.` };
}

/**
 * The other save a restore loaded, decided once: among the split's `saved` events at steps other
 * than the intended `reference`'s, the one whose digests equal the loaded digests in the most of
 * the `differing` components (at least one; `step` alone never counts); undefined when none does.
 */
export function loadedOtherSave(
  reference: EventRecord,
  loaded: EventRecord,
  saves: readonly EventRecord[],
  differing: readonly string[],
): LoadedSave | undefined {
  const components = differing.filter((c) => c !== "step");
  const got = loaded.fields.digests as Record<string, unknown>;
  let best: LoadedSave | undefined;
  for (const save of saves) {
    if (save.step === null || save.step === reference.step) continue;
    const held = save.fields.digests as Record<string, unknown>;
    const equal = components.filter((c) =>
      c in held && c in got && JSON.stringify(held[c]) === JSON.stringify(got[c])
    ).sort();
    if (equal.length > 0 && (best === undefined || equal.length > best.components.length)) {
      best = { step: save.step, components: equal, all: equal.length === components.length };
    }
  }
  return best;
}

/**
 * The save check, three ways: the split's `saved` digests (the engine's state right after the
 * save) against the `snapshot` the baseline reported at the same step without saving — the
 * checkpoint holds what the uninterrupted run held at step N — and, when the split reports a
 * `files` event (the checkpoint's files read back by a process of their own, no engine), the
 * `saved` digests against what the files hold. A save that captured the wrong state (a cursor
 * saved early, the RNG after an extra draw) fails the first; a save that wrote no optimizer state
 * or wrote other bytes than the engine held fails the second ("not in the checkpoint files"),
 * while every restore from it may still match the engine. N/A when neither a snapshot nor a
 * `files` event exists (the trainer contract's `${digest_at}` is optional).
 */
export function checkSavedState(
  split: string,
  baseline: MetricSeries | undefined,
  splitSeries: MetricSeries | undefined,
  saveAt: number,
): StateCheckSummary {
  const saved = findDigestEvent(splitSeries, "saved", saveAt);
  const snapshot = findDigestEvent(baseline, "snapshot", saveAt);
  const files = findDigestEvent(splitSeries, "files", saveAt);
  const engine = snapshot === undefined && files !== undefined ? undefined : _compareDigests(
    split,
    "save",
    {
      reference: snapshot,
      candidate: saved,
      referenceSide: "the baseline's snapshot event",
      candidateSide: "the split's saved event",
      steps: ["saved", "snapshot"],
      differs: `the checkpoint differs from the uninterrupted run's state at step ${saveAt}`,
      matches: `match the uninterrupted run's state at step ${saveAt}`,
      unavailable: "so the save cannot be checked",
    },
  );
  if (files === undefined || saved === undefined) return engine!;
  return _withFiles(split, engine, saved, files);
}

/**
 * The convert check: the universal folder the converter wrote, read back by the checkpoint
 * reader (`document`), against the split's `saved` digests by the same names. A component the
 * folder does not hold is "not in the checkpoint files"; one it holds with other bytes differs
 * (its tensors named); components no universal folder holds (`not_read`: the module weights,
 * the accumulation-window position) are not compared. N/A without the split's digests.
 */
export function checkConvertedFiles(
  convert: string,
  splitSeries: MetricSeries | undefined,
  document: Record<string, unknown>,
  saveAt: number,
): StateCheckSummary {
  const saved = findDigestEvent(splitSeries, "saved", saveAt);
  if (saved === undefined || !isDigestMap(document.digests)) {
    return {
      phase: convert,
      check: "convert",
      verdict: "N/A",
      available: false,
      differing: [],
      reason: "the split's saved event carries no state digests, so the universal folder " +
        "cannot be checked.",
    };
  }
  const files: EventRecord = {
    event: "files",
    step: saveAt,
    line: 0,
    fields: { event: "files", step: saveAt, ...document },
  };
  const summary = _withFiles(convert, undefined, saved, files, "convert");
  return {
    ...summary,
    reason: (summary.reason ?? "")
      .replace("Files vs engine:", "The universal folder vs the split's saved state:")
      .replace("not in the checkpoint files", "not in the universal folder")
      .replace(
        "the checkpoint files differ from the engine's",
        "the universal folder differs from the",
      )
      .replace("the checkpoint files hold the engine's", "the universal folder holds the")
      .replace("Not checkable from the files", "Not checkable from the universal folder"),
  };
}

/**
 * The save check's file side: each component of the engine's `saved` digests that the reader
 * found `absent` from the files is "not in the checkpoint files"; each it read and hashed
 * differently differs (and its tensors are named); components the reader does not reproduce
 * (`not_read`, or not reported) are not compared.
 */
function _withFiles(
  split: string,
  engine: StateCheckSummary | undefined,
  saved: EventRecord,
  files: EventRecord,
  check: "save" | "convert" = "save",
): StateCheckSummary {
  const engineDigests = saved.fields.digests as Record<string, unknown>;
  const fileDigests = files.fields.digests as Record<string, unknown>;
  const absent = new Set(_strings(files.fields.absent));
  const notInFiles: string[] = [];
  const filesDiffering: string[] = [];
  const compared: string[] = [];
  for (const name of Object.keys(engineDigests).sort()) {
    if (absent.has(name)) notInFiles.push(name);
    else if (name in fileDigests) {
      compared.push(name);
      if (JSON.stringify(fileDigests[name]) !== JSON.stringify(engineDigests[name])) {
        filesDiffering.push(name);
      }
    }
  }
  const fileTensors = files.fields.tensors;
  const tensors = isDigestMap(fileTensors) && isDigestMap(saved.fields.tensors)
    ? _differingTensors(
      Object.fromEntries(
        Object.entries(saved.fields.tensors).filter(([k]) => k in fileTensors),
      ),
      fileTensors,
    ) ?? []
    : [];
  const base: StateCheckSummary = engine ?? {
    phase: split,
    check,
    verdict: "PASS",
    available: true,
    differing: [],
    compared: [],
  };
  const differing = [...new Set([...base.differing, ...notInFiles, ...filesDiffering])];
  const sentences: string[] = [];
  // Two comparisons in one reason: say which each sentence is about.
  if (engine !== undefined && engine.reason) sentences.push(`Engine vs baseline: ${engine.reason}`);
  sentences.push("Files vs engine:");
  if (notInFiles.length > 0) {
    sentences.push(`not in the checkpoint files: ${notInFiles.join(", ")}.`);
  }
  if (filesDiffering.length > 0) {
    sentences.push(
      `the checkpoint files differ from the engine's saved state in ${filesDiffering.join(", ")}${
        tensors.length > 0 ? ` (${tensors.slice(0, 3).join(", ")})` : ""
      }.`,
    );
  }
  if (notInFiles.length === 0 && filesDiffering.length === 0) {
    sentences.push(`the checkpoint files hold the engine's saved ${compared.join(", ")}.`);
  }
  // What the reader says the files cannot give (never counted as equal).
  const whyNot = files.fields.not_read;
  const notCheckable = whyNot !== null && typeof whyNot === "object" && !Array.isArray(whyNot)
    ? Object.keys(engineDigests).filter((name) => !absent.has(name) && !(name in fileDigests))
      .filter((name) => name in (whyNot as Record<string, unknown>)).sort()
    : [];
  if (notCheckable.length > 0) {
    const reasons = notCheckable.map((name) =>
      `${name}: ${String((whyNot as Record<string, unknown>)[name])}`
    );
    sentences.push(`Not checkable from the files: ${reasons.join("; ")}.`);
  }
  const framework = typeof saved.fields.framework === "string"
    ? saved.fields.framework
    : base.framework;
  const summary: StateCheckSummary = {
    ...base,
    ...(framework !== undefined ? { framework } : {}),
    available: true,
    differing,
    compared: [...new Set([...(base.compared ?? []), ...compared])].sort(),
    files_compared: compared,
    reason: sentences.join(" "),
  };
  if (notInFiles.length > 0) summary.not_in_files = notInFiles;
  if (notCheckable.length > 0) summary.files_not_checkable = notCheckable;
  if (filesDiffering.length > 0) summary.files_differing = filesDiffering;
  if (tensors.length > 0 && (summary.differing_tensors ?? []).length === 0) {
    summary.differing_tensors = tensors.slice(0, MAX_TENSORS_NAMED);
    summary.differing_tensors_total = tensors.length;
  }
  if (differing.length > 0) summary.verdict = "FAIL";
  else if (engine === undefined) summary.verdict = "PASS";
  return summary;
}

function _strings(x: unknown): string[] {
  return Array.isArray(x) ? x.filter((v): v is string => typeof v === "string") : [];
}

interface _DigestPair {
  reference: EventRecord | undefined;
  candidate: EventRecord | undefined;
  referenceSide: string;
  candidateSide: string;
  /** What the candidate's and the reference's steps are called in a step mismatch. */
  steps: [string, string];
  differs: string;
  matches: string;
  unavailable: string;
}

function _compareDigests(
  phase: string,
  check: StateCheckSummary["check"],
  pair: _DigestPair,
): StateCheckSummary {
  const { reference, candidate } = pair;
  const base = { phase, ...(check ? { check } : {}) };
  if (reference === undefined || candidate === undefined) {
    const side = reference === undefined && candidate === undefined
      ? `neither ${pair.referenceSide} nor ${pair.candidateSide} carries`
      : reference === undefined
      ? `${pair.referenceSide} does not carry`
      : `${pair.candidateSide} does not carry`;
    return {
      ...base,
      verdict: "N/A",
      available: false,
      differing: [],
      reason: `${side} state digests, ${pair.unavailable}.`,
    };
  }
  const a = reference.fields.digests as Record<string, unknown>;
  const b = candidate.fields.digests as Record<string, unknown>;
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  const differing: string[] = [];
  const missing: string[] = [];
  const compared: string[] = [];
  for (const name of names) {
    if (!(name in a) || !(name in b)) {
      missing.push(name);
      continue;
    }
    compared.push(name);
    if (JSON.stringify(a[name]) !== JSON.stringify(b[name])) differing.push(name);
  }
  if (reference.step !== null && candidate.step !== null && reference.step !== candidate.step) {
    differing.unshift("step");
  }
  const tensors = _differingTensors(reference.fields.tensors, candidate.fields.tensors);
  const summary: StateCheckSummary = {
    ...base,
    verdict: "PASS",
    available: true,
    differing,
    compared,
  };
  const framework = [candidate, reference].map((e) => e.fields.framework)
    .find((f): f is string => typeof f === "string");
  if (framework !== undefined) summary.framework = framework;
  if (missing.length > 0) summary.missing = missing;
  if (tensors && tensors.length > 0) {
    summary.differing_tensors = tensors.slice(0, MAX_TENSORS_NAMED);
    summary.differing_tensors_total = tensors.length;
  }
  if (differing.length > 0) {
    summary.verdict = "FAIL";
    const stepNote = differing[0] === "step"
      ? ` (${pair.steps[0]} step ${candidate.step}, ${pair.steps[1]} step ${reference.step})`
      : "";
    summary.reason = `${pair.differs} in ${differing.join(", ")}${stepNote}.`;
  } else if (missing.length > 0) {
    summary.verdict = "ERROR";
    summary.reason = `components on one side only cannot be verified: ${missing.join(", ")}.`;
  } else {
    summary.reason = `all ${compared.length} state components ${pair.matches}.`;
  }
  return withTensorErrors(summary, pair);
}

/**
 * A check one of whose events names a `tensors_file` the reader could not use: ERROR where it
 * would PASS (the tensors were not verified), and the reason says why in every case.
 */
function withTensorErrors(summary: StateCheckSummary, pair: _DigestPair): StateCheckSummary {
  const errors = [
    [pair.referenceSide, pair.reference],
    [pair.candidateSide, pair.candidate],
  ].flatMap(([side, event]) => {
    const why = (event as EventRecord).fields[TENSORS_ERROR_FIELD];
    return typeof why === "string" ? [`${side}: ${why}`] : [];
  });
  if (errors.length === 0) return summary;
  const note = `the per-tensor digests cannot be verified (${errors.join("; ")}).`;
  if (summary.verdict === "PASS") {
    return { ...summary, verdict: "ERROR", reason: `${summary.reason} But ${note}` };
  }
  return { ...summary, reason: `${summary.reason} Also ${note}` };
}

/**
 * A restore check's `loaded_save` in words, for cards, reports and JUnit alike: `loaded the state
 * saved at step 6, not step 3's` (or `loaded the params saved at step 6, ...` when only some
 * differing components equal that save); empty without one.
 */
export function loadedSaveText(
  check: Pick<StateCheckSummary, "loaded_save" | "from_step">,
): string {
  const other = check.loaded_save;
  if (other === undefined) return "";
  const what = other.all ? "the state" : `the ${other.components.join(", ")}`;
  const meant = check.from_step !== undefined ? `, not step ${check.from_step}'s` : "";
  return `loaded ${what} saved at step ${other.step}${meant}`;
}

/** Differing tensors a state check lists (the total is counted). */
export const MAX_TENSORS_NAMED = 50;

/**
 * The tensors whose per-tensor digests differ (or that one side lacks), in the reference's
 * order; null unless both events carry a `tensors` map.
 */
function _differingTensors(a: unknown, b: unknown): string[] | null {
  if (!isDigestMap(a) || !isDigestMap(b)) return null;
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  return names.filter((n) => JSON.stringify(a[n]) !== JSON.stringify(b[n]));
}

/**
 * The tensors the first check that names any names, in words: `layers.0.experts.w2 · expert 2 ·
 * exp_avg, … (+3 more tensors)`; empty when no check names tensors.
 */
export function tensorList(checks: readonly StateCheckSummary[], shown = 3): string {
  const check = checks.find((c) => (c.differing_tensors ?? []).length > 0);
  if (check === undefined) return "";
  const named = check.differing_tensors!.slice(0, shown);
  const more = (check.differing_tensors_total ?? named.length) - named.length;
  return `${named.join(", ")}${more > 0 ? ` (+${more} more tensors)` : ""}`;
}

/**
 * How reports name a state check: its phase, `(save)` for the save check and `(save perturbs)`
 * for a fused split's perturbation check.
 */
export function stateCheckName(check: Pick<StateCheckSummary, "phase" | "check">): string {
  if (check.check === "perturb") return `${check.phase} (save perturbs)`;
  return check.check === "save"
    ? `${check.phase} (save)`
    : check.check === "convert"
    ? `${check.phase} (universal folder)`
    : check.phase;
}

/**
 * A fused split's perturbation check (issue 37): the baseline saves at `saveAt` and trains on,
 * so the `snapshot` it reported just before its save is compared with the `after_save` digests
 * of the state it continues with just after. A save that moves the running RNG, data cursor or
 * any other state FAILs it: the run the resumes are compared with was itself changed by the
 * save, which a separate split (a baseline that never saves) would have shown as a divergence.
 * N/A when either event is missing (`after_save` is part of the fused contract).
 */
export function checkSavePerturbation(
  phase: string,
  series: MetricSeries | undefined,
  saveAt: number,
): StateCheckSummary {
  return _compareDigests(phase, "perturb", {
    reference: findDigestEvent(series, "snapshot", saveAt),
    candidate: findDigestEvent(series, "after_save", saveAt),
    referenceSide: "the baseline's snapshot event (before its save)",
    candidateSide: "the baseline's after_save event",
    steps: ["after_save", "snapshot"],
    differs: `the save changed the state the run continues with at step ${saveAt}`,
    matches: `are the same just before and just after the save at step ${saveAt}`,
    unavailable: "so whether the save perturbs the run cannot be checked",
  });
}

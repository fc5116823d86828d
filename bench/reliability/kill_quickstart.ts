/**
 * The harness SIGKILLed at random moments of a quickstart run, and re-run each time
 * (docs/reliability.md, "Killed harness"). Each trial has its own results folder, so nothing is
 * cached from another trial: the killed run does part of the work, the re-run — the same command —
 * must reuse what completed, finish with the verdict of a clean run, and leave no process of the
 * results folder, no lock and no `*.tmp` file. Moments are uniform over the length of a clean
 * uncached run.
 *
 *   deno task reliability:kill [--kills 50] [--seed 1] [--results DIR]
 *
 * Prints one line per trial and a JSON summary (`--json FILE` also writes it).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { join, resolve } from "node:path";
import { leftovers, processesOf } from "../../test/_testing/leftovers.ts";
import { seededRandom } from "../../test/_testing/seeded_random.ts";

const { values } = parseArgs({
  options: {
    kills: { type: "string", default: "50" },
    seed: { type: "string", default: "1" },
    results: { type: "string" },
    json: { type: "string" },
  },
});
const PROJECT = resolve(import.meta.dirname!, "../..");
const kills = Number(values.kills);
const random = seededRandom(Number(values.seed));
const root = resolve(values.results ?? await Deno.makeTempDir({ prefix: "parity-kill-" }));
const QUICKSTART = join(PROJECT, "experiments/quickstart.yaml");

function harness(results: string): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--quiet",
      join(PROJECT, "src/cli/main.ts"),
      "run",
      QUICKSTART,
      "--results",
      results,
      "--quiet",
    ],
    cwd: PROJECT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

async function finish(child: Deno.ChildProcess) {
  const out = await child.output();
  const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
  return { code: out.code, text };
}

async function verdictOf(results: string): Promise<string> {
  const summary = JSON.parse(
    await Deno.readTextFile(join(results, "quickstart", "latest", "summary.json")),
  );
  return `${summary.verdict} (${
    summary.phases.filter((p: { cached: boolean }) => p.cached).length
  }/${summary.phases.length} reused)`;
}

const t0 = performance.now();
const clean = await finish(harness(join(root, "clean")));
const cleanS = (performance.now() - t0) / 1000;
if (clean.code !== 0) throw new Error(`the clean quickstart did not pass:\n${clean.text}`);
const expected = (await verdictOf(join(root, "clean"))).split(" ")[0];
console.log(
  `clean uncached quickstart: ${cleanS.toFixed(1)} s; killing within [0, ${cleanS.toFixed(1)}] s`,
);

interface Trial {
  trial: number;
  kill_at_s: number;
  killed_before_exit: boolean;
  orphans_after_kill: number;
  rerun_code: number;
  rerun_s: number;
  verdict: string;
  orphans_after_rerun: number;
  locks: number;
  tmp: number;
  notes: string[];
}
const trials: Trial[] = [];
for (let i = 0; i < kills; i++) {
  const results = join(root, `trial-${i + 1}`);
  const killAt = random() * cleanS;
  const child = harness(results);
  const done = finish(child);
  const exited = await Promise.race([
    done.then(() => true),
    new Promise<false>((r) => setTimeout(() => r(false), killAt * 1000)),
  ]);
  if (!exited) {
    try {
      child.kill("SIGKILL");
    } catch { /* exited meanwhile */ }
  }
  await done;
  const orphansAfterKill = (await processesOf(results)).length;
  const start = performance.now();
  const rerun = await finish(harness(results));
  const rerunS = (performance.now() - start) / 1000;
  const left = await leftovers(results);
  const trial: Trial = {
    trial: i + 1,
    kill_at_s: Math.round(killAt * 1000) / 1000,
    killed_before_exit: !exited,
    orphans_after_kill: orphansAfterKill,
    rerun_code: rerun.code,
    rerun_s: Math.round(rerunS * 10) / 10,
    verdict: await verdictOf(results).catch(() => "none"),
    orphans_after_rerun: (await processesOf(results)).length,
    locks: left.locks.length,
    tmp: left.tmp.length,
    notes: rerun.text.split("\n").filter((l) =>
      /killed process group|moved aside|removed a temporary|took over the lock/.test(l)
    ),
  };
  trials.push(trial);
  console.log(
    `#${trial.trial} kill at ${trial.kill_at_s.toFixed(2)} s${exited ? " (had exited)" : ""}: ` +
      `orphans ${orphansAfterKill} -> re-run exit ${rerun.code} ${trial.verdict} in ${trial.rerun_s} s; ` +
      `orphans ${trial.orphans_after_rerun}, locks ${trial.locks}, tmp ${trial.tmp}` +
      (trial.notes.length ? `\n    ${trial.notes.join("\n    ")}` : ""),
  );
  if (rerun.code !== 0) console.log(rerun.text.slice(-2000));
  if (left.tmp.length) console.log(`    tmp: ${left.tmp.join(" ")}`);
  if (trial.rerun_code === 0 && trial.verdict.startsWith(expected) && !left.tmp.length) {
    await Deno.remove(results, { recursive: true });
  }
}
const bad = trials.filter((t) =>
  t.rerun_code !== 0 || !t.verdict.startsWith(expected) || t.orphans_after_rerun > 0 ||
  t.locks > 0 || t.tmp > 0
);
const figures = {
  kills,
  seed: Number(values.seed),
  clean_uncached_s: Math.round(cleanS * 10) / 10,
  killed_mid_run: trials.filter((t) => t.killed_before_exit).length,
  left_orphans_when_killed: trials.filter((t) => t.orphans_after_kill > 0).length,
  expected_verdict: expected,
  reruns_same_verdict: trials.filter((t) => t.verdict.startsWith(expected)).length,
  reruns_with_leftovers: bad.length,
  rerun_s_median: trials.map((t) => t.rerun_s).sort((a, b) => a - b)[Math.floor(trials.length / 2)],
  results: root,
};
console.log(JSON.stringify(figures));
if (values.json) {
  await Deno.writeTextFile(values.json, JSON.stringify({ figures, trials }, null, 2));
}
if (!values.results && bad.length === 0) await Deno.remove(root, { recursive: true });
Deno.exit(bad.length === 0 ? 0 : 1);

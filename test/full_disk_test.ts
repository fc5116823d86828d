/**
 * A real full disk: the results folder lives on a small tmpfs this test mounts (root only), and
 * the free space is cut, measured from an identical run just before, so the filesystem fills up
 * during the split's save, during the converter's output and during report writing. Each run is
 * ERROR (exit 3) saying so in one sentence, with no stack trace; the earlier run folders and
 * history.csv are intact; and once space is back the same command completes without reusing the
 * half-written phase.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { latestSummary, runCli, writeExperiment } from "./_testing/cli_harness.ts";
import { leftovers } from "./_testing/leftovers.ts";
import { sha256Hex } from "../src/pipeline/store/sha256.ts";

const root = Deno.uid() === 0;
const inCi = Deno.env.get("CI") === "true";
if (!root && !inCi) console.error("full-disk tests ignored: mounting a tmpfs needs root");

async function sh(...argv: string[]): Promise<string> {
  const out = await new Deno.Command(argv[0], { args: argv.slice(1), stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`${argv.join(" ")}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  return text;
}

/** Bytes allocated on the filesystem of `path` (tmpfs counts whole pages). */
async function freeBytes(path: string): Promise<number> {
  const [free, size] = (await sh("stat", "-f", "-c", "%f %S", path)).trim().split(" ").map(Number);
  return free * size;
}

async function allocated(...paths: string[]): Promise<number> {
  let total = 0;
  for (const p of paths) total += Number((await sh("du", "-s", "-B1", p)).split("\t")[0]);
  return total;
}

/** Every file under `dir` with its content (symlinks by target), to prove nothing changed. */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(d)) {
      const p = join(d, e.name);
      if (e.isSymlink) out.set(p, `-> ${await Deno.readLink(p)}`);
      else if (e.isDirectory) await walk(p);
      else out.set(p, await sha256Hex(await Deno.readFile(p)));
    }
  };
  await walk(dir);
  return out;
}

Deno.test({
  name:
    "full disk during the save, the converter's output and report writing: ERROR in one sentence, nothing earlier lost",
  ignore: !root && !inCi,
  async fn() {
    assert.ok(root, "the full-disk test needs root (to mount a tmpfs); CI runs as root");
    const dir = await Deno.makeTempDir();
    const mount = join(dir, "disk");
    await Deno.mkdir(mount);
    await sh("mount", "-t", "tmpfs", "-o", "size=24m,mode=0755", "tmpfs", mount);
    try {
      const file = await writeExperiment(dir, "x.yaml", {
        name: "full-disk",
        seed: 11,
        schedule: { steps: 6, save_at: 3 },
        trainer: { preset: "reference", timeout: 120, args: { world_size: 2, zero_stage: 2 } },
        resume: { universal: { from: "universal" } },
      });
      const results = join(mount, "results");
      const experimentDir = join(results, "full-disk");
      const run = (...extra: string[]) =>
        runCli(["run", file, "--results", results, "--quiet", ...extra]);
      const first = await run();
      assert.equal(first.code, 0, first.stderr);
      const filler = join(mount, "filler");

      /**
       * Runs `extra` once on ample space to measure what it writes, then again with the free space
       * cut so the filesystem fills up half-way through `late(runDir)`: what the run writes up to
       * and including `late` (everything but the files written after it, `after`) minus half of
       * `late`.
       */
      const onFullDisk = async (
        extra: string[],
        late: (runDir: string) => string[],
        after: (runDir: string) => string[],
      ) => {
        const measured = await run(...extra);
        assert.equal(measured.code, 0, measured.stderr);
        const runDir = join(experimentDir, (await latestSummary(results, "full-disk")).run_id);
        const lateBytes = await allocated(...late(runDir));
        const upToLate = (await allocated(runDir)) - (await allocated(...after(runDir)));
        const earlier = await snapshot(experimentDir);
        const history = await Deno.readTextFile(join(results, "history.csv"));
        const keep = upToLate - Math.floor(lateBytes / 2);
        await Deno.writeFile(filler, new Uint8Array(Math.max(0, (await freeBytes(mount)) - keep)));
        const full = await run(...extra);
        await Deno.remove(filler);
        const fullRun = (await Array.fromAsync(Deno.readDir(experimentDir)))
          .map((e) => e.name).filter((n) => /^\d{8}T/.test(n)).sort().at(-1)!;
        // Whatever the full run managed to leave, every earlier file is byte for byte the same.
        const now = await snapshot(experimentDir);
        for (const [path, content] of earlier) {
          if (path === join(experimentDir, "latest")) continue; // names the newest run, by design
          assert.equal(now.get(path), content, `${path} changed on the full disk`);
        }
        const historyAfter = await Deno.readTextFile(join(results, "history.csv"));
        assert.ok(historyAfter.startsWith(history), "history.csv keeps every earlier row");
        assert.ok(historyAfter.endsWith("\n"), "and no half row");
        assert.equal((await leftovers(results)).tmp.length, 0, "no *.tmp file left");
        return { full, lateBytes, fullRunDir: join(experimentDir, fullRun) };
      };

      const oneSentence = (label: string, out: { code: number; stderr: string }) => {
        assert.equal(out.code, 3, `${label}: exit 3\n${out.stderr}`);
        assert.ok(!out.stderr.includes("    at "), `${label}: no stack trace\n${out.stderr}`);
        assert.match(out.stderr, /no space left|is full/i, `${label}: says the disk is full`);
      };

      const reports = (runDir: string) =>
        ["report.html", "report.md", "junit.xml", "charts", "summary.json", "losses.csv"].map((f) =>
          join(runDir, f)
        );
      const save = await onFullDisk(
        ["--force", "split", "--only", "split"],
        (runDir) => [join(runDir, "phases/split/checkpoints")],
        reports,
      );
      oneSentence("save", save.full);
      // The disk filled up inside the trainer's own save (its log could not be written either):
      // the checkpoint never got its completion marker.
      const exists = (p: string) => Deno.stat(p).then(() => true, () => false);
      const splitDir = join(save.fullRunDir, "phases/split");
      assert.ok(await exists(join(splitDir, "checkpoints")), "the save had begun");
      assert.ok(!await exists(join(splitDir, "checkpoints/global_step3/checkpoint_complete.json")));
      const convert = await onFullDisk(
        ["--force", "convert", "--only", "convert"],
        (runDir) => [join(runDir, "phases/convert/global_step3_universal")],
        reports,
      );
      oneSentence("convert", convert.full);
      const universal = join(convert.fullRunDir, "phases/convert/global_step3_universal");
      assert.ok(!await exists(join(universal, "universal_complete.json")), "the converter was cut");
      const report = await onFullDisk(
        [],
        (runDir) => [join(runDir, "report.html"), join(runDir, "charts")],
        () => [],
      );
      oneSentence("reports", report.full);

      // Space is back: the same command completes, reusing only complete phases.
      const again = await run();
      assert.equal(again.code, 0, again.stderr);
      const summary = await latestSummary(results, "full-disk");
      assert.equal(summary.verdict, "PASS");
      console.log(
        `full disk: save ${save.full.stderr.trim().split("\n").at(-1)}\n` +
          `  convert ${convert.full.stderr.trim().split("\n").at(-1)}\n` +
          `  reports ${report.full.stderr.trim().split("\n").at(-1)}`,
      );
    } finally {
      await sh("umount", "-l", mount).catch(() => {});
      await Deno.remove(dir, { recursive: true });
    }
  },
});

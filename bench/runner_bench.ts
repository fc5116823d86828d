/**
 * The front door's costs: a fresh quickstart run (every phase a real child), a re-run of the
 * unchanged quickstart (every phase reused from the cache), and the harness overhead
 * `wall_s / children_wall_s` of fresh runs, read from their summary.json, against its target
 * (median ≤ {@link OVERHEAD_TARGET}, issue 24).
 *
 * Run: `deno bench -A bench/runner_bench.ts` (prints the overhead ratios and the machine's load
 * after the table).
 *
 * @module
 */

const PROJECT = new URL("..", import.meta.url).pathname;
const CLI = `${PROJECT}src/cli/main.ts`;
const QUICKSTART = `${PROJECT}experiments/quickstart.yaml`;
const dir = Deno.makeTempDirSync({ prefix: "runner_bench_" });
const ratios: number[] = [];
/** The harness's own share of a fresh quickstart: median `wall_s / children_wall_s` at most this. */
const OVERHEAD_TARGET = 1.02;
globalThis.addEventListener("unload", () => {
  if (ratios.length > 0) {
    const sorted = [...ratios].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    const load = Deno.loadavg().map((l) => l.toFixed(2)).join(", ");
    console.log(
      `quickstart wall_s / children_wall_s over ${ratios.length} fresh runs: ` +
        `median ${median.toFixed(4)}, max ${sorted.at(-1)!.toFixed(4)} ` +
        `(target ≤ ${OVERHEAD_TARGET}: ${median <= OVERHEAD_TARGET ? "met" : "MISSED"}; ` +
        `load ${load})`,
    );
  }
  Deno.removeSync(dir, { recursive: true });
});

async function run(results: string, extra: string[] = []): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--quiet",
      CLI,
      "run",
      QUICKSTART,
      "--results",
      results,
      "--quiet",
      ...extra,
    ],
    cwd: PROJECT,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (out.code !== 0) {
    throw new Error(`quickstart exited ${out.code}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

let fresh = 0;
Deno.bench({
  name: "quickstart, fresh (12 phases run)",
  group: "quickstart",
  n: 5,
  warmup: 0,
  async fn() {
    const results = `${dir}/fresh-${fresh++}`;
    await run(results);
    const latest = Deno.readLinkSync(`${results}/quickstart/latest`);
    const summary = JSON.parse(
      Deno.readTextFileSync(`${results}/quickstart/${latest}/summary.json`),
    );
    ratios.push(summary.wall_s / summary.children_wall_s);
  },
});

const cached = `${dir}/cached`;
let primed = false;
Deno.bench({
  name: "quickstart, unchanged re-run (every phase cached)",
  group: "quickstart",
  baseline: true,
  n: 10,
  warmup: 1,
  async fn(b) {
    if (!primed) {
      await run(cached);
      primed = true;
    }
    b.start();
    await run(cached);
    b.end();
  },
});

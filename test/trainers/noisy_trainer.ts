/**
 * A test-fixture trainer honouring the trainer contract (README.md, "The trainer contract"): it reads `PARITY_*`
 * environment variables, appends step records `{"step", "loss", "lr"}` to
 * `PARITY_METRICS_FILE` for steps 1..PARITY_STOP_AT (or from the checkpoint's step + 1 when
 * `PARITY_RESUME_FROM` is set), and "checkpoints" by writing `{"step": N}` to
 * `PARITY_CHECKPOINT_DIR/global_step<N>/state.json` plus a `latest` file. Its loss is a
 * deterministic curve times (1 + u·noise) with u uniform in [-1, 1) from `Math.random()` on
 * every step, plus a momentum term: an exponential moving average of the curve's step-to-step
 * change, saved in the checkpoint and restored on resume. Two runs never agree bit for bit: a
 * harness must never PASS its exact lanes (given repeated baselines it ABSTAINs them, and the
 * companion lanes at the noise-derived tolerance PASS). It emits `saved`/`loaded` events without
 * digests.
 *
 * Usage: `deno run -A noisy_trainer.ts [--noise REL] [--digests] [--loader-from-rng]
 * [--fault lost-momentum]` (default noise 1e-7; `--noise 0` is noiseless and bit-reproducible).
 * `--digests` adds the same state digests to `saved` and `loaded` events; `--loader-from-rng`
 * models the PyTorch pitfall of a data loader seeded from the restored global RNG: a resumed run
 * sees other batches from its first step, although every restored digest matches.
 * `--fault lost-momentum` is a real resume bug: the resume starts from a zero momentum instead
 * of the saved one, so its losses differ (by about 5e-3 relative at the first resumed step,
 * decaying) far above the noise. Other `--flag value` pairs are accepted and ignored, so
 * experiment argv templates written for other trainers still run.
 *
 * @module
 */

function flag(args: string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === `--${name}`) return args[i + 1];
    if (args[i].startsWith(`--${name}=`)) return args[i].slice(name.length + 3);
  }
  return undefined;
}

function env(name: string): string | undefined {
  const value = Deno.env.get(name);
  return value === undefined || value === "" ? undefined : value;
}

function positiveInt(name: string, fallback?: number): number {
  const raw = env(name);
  if (raw === undefined) {
    if (fallback !== undefined) return fallback;
    throw new Error(`${name} is not set`);
  }
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name}=${raw} is not an integer`);
  return n;
}

/** The deterministic part of the loss at `step`. */
export function cleanLoss(step: number, seed: number): number {
  return 2 + 3 * Math.exp(-step / 25) + 0.05 * Math.sin(step * 0.7 + seed);
}

/** Decay of the momentum (an EMA of the curve's step-to-step change). */
const MOMENTUM_BETA = 0.9;
/** How much the momentum moves the loss. */
const MOMENTUM_GAIN = 0.4;

/** The momentum after `step`, from the momentum after `step - 1`. */
export function nextMomentum(momentum: number, step: number, seed: number): number {
  const change = cleanLoss(step, seed) - cleanLoss(step - 1, seed);
  return MOMENTUM_BETA * momentum + (1 - MOMENTUM_BETA) * change;
}

/** Warmup (10% of the schedule) then cosine decay, over the full schedule `steps`. */
export function learningRate(step: number, steps: number): number {
  const peak = 3e-4;
  const warmup = Math.max(1, Math.floor(steps / 10));
  if (step <= warmup) return (peak * step) / warmup;
  const progress = (step - warmup) / Math.max(1, steps - warmup);
  return 0.5 * peak * (1 + Math.cos(Math.PI * progress));
}

/** The step and momentum a checkpoint holds. */
async function resumeState(from: string): Promise<{ step: number; momentum: number }> {
  let dir = from;
  try {
    await Deno.stat(`${dir}/state.json`);
  } catch {
    const latest = (await Deno.readTextFile(`${dir}/latest`)).trim();
    dir = `${dir}/${latest}`;
  }
  const state = JSON.parse(await Deno.readTextFile(`${dir}/state.json`));
  if (!Number.isInteger(state.step)) throw new Error(`${dir}/state.json has no integer step`);
  if (typeof state.momentum !== "number") throw new Error(`${dir}/state.json has no momentum`);
  return { step: state.step, momentum: state.momentum };
}

async function main(args: string[]): Promise<number> {
  const noise = Number(flag(args, "noise") ?? "1e-7");
  const digests = args.includes("--digests")
    ? { params: "p1", rng: "r1", sampler: "s1" }
    : undefined;
  const loaderFromRng = args.includes("--loader-from-rng");
  const fault = flag(args, "fault");
  if (!Number.isFinite(noise) || noise < 0) {
    console.error(`--noise expects a non-negative number`);
    return 2;
  }
  if (fault !== undefined && fault !== "lost-momentum") {
    console.error(`--fault expects lost-momentum`);
    return 2;
  }
  const steps = positiveInt("PARITY_STEPS");
  const stopAt = positiveInt("PARITY_STOP_AT", steps);
  const saveAt = env("PARITY_SAVE_AT") === undefined ? undefined : positiveInt("PARITY_SAVE_AT");
  const seed = positiveInt("PARITY_SEED", 1234);
  const metricsFile = env("PARITY_METRICS_FILE");
  if (metricsFile === undefined) throw new Error("PARITY_METRICS_FILE is not set");
  const checkpointDir = env("PARITY_CHECKPOINT_DIR");
  const resumeFrom = env("PARITY_RESUME_FROM");

  const lines: string[] = [];
  let first = 1;
  let momentum = 0;
  if (resumeFrom !== undefined) {
    const state = await resumeState(resumeFrom);
    lines.push(JSON.stringify({ event: "loaded", step: state.step, digests }));
    first = state.step + 1;
    // The bug: the optimizer state is not restored, so the momentum restarts from zero.
    momentum = fault === "lost-momentum" ? 0 : state.momentum;
  }
  for (let step = first; step <= stopAt; step++) {
    const u = noise === 0 ? 0 : 2 * Math.random() - 1;
    momentum = nextMomentum(momentum, step, seed);
    // Other batches after a resume: a small data-dependent shift of the curve.
    const batch = loaderFromRng && resumeFrom !== undefined ? 0.01 * Math.cos(step * 1.3) : 0;
    const loss = (cleanLoss(step, seed) + MOMENTUM_GAIN * momentum + batch) * (1 + u * noise);
    lines.push(JSON.stringify({ step, loss, lr: learningRate(step, steps) }));
    if (step === saveAt) {
      if (checkpointDir === undefined) throw new Error("PARITY_CHECKPOINT_DIR is not set");
      const tag = `global_step${step}`;
      await Deno.mkdir(`${checkpointDir}/${tag}`, { recursive: true });
      await Deno.writeTextFile(
        `${checkpointDir}/${tag}/state.json`,
        JSON.stringify({ step, seed, momentum }),
      );
      await Deno.writeTextFile(`${checkpointDir}/latest`, tag);
      lines.push(JSON.stringify({ event: "saved", step, digests }));
    }
  }
  await Deno.writeTextFile(metricsFile, lines.map((l) => l + "\n").join(""), { append: true });
  console.log(`noisy trainer: ${env("PARITY_PHASE") ?? "phase"} steps ${first}..${stopAt}`);
  return 0;
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (error) {
    console.error(`noisy trainer: ${error instanceof Error ? error.message : String(error)}`);
    Deno.exit(1);
  }
}

// A contract trainer whose loss depends on a seeded random stream, so a resume is bit-identical
// only when it restores the stream. Its checkpoint is `global_step<N>/state.json`.
//
// Switches: LR=<number> (default 0.01) changes the update; SLEEP_MS=<n> sleeps first (for signal
// tests). Tests copy this file and drop the line restoring `rng` from the checkpoint to make a
// resume bug, or edit the update to make a code change.
const env = (k: string) => Deno.env.get(k) ?? "";
const lr = Number(env("LR") || "0.01");
if (env("SLEEP_MS")) await new Promise((r) => setTimeout(r, Number(env("SLEEP_MS"))));
const stopAt = Number(env("PARITY_STOP_AT"));
const saveAt = env("PARITY_SAVE_AT");
const resumeFrom = env("PARITY_RESUME_FROM");
let rng = (Number(env("PARITY_SEED")) >>> 0) || 1;
const next = () => {
  rng = (Math.imul(rng, 1664525) + 1013904223) >>> 0;
  return rng / 2 ** 32;
};
let w = 1;
let start = 1;
const lines: string[] = [];
if (resumeFrom) {
  const state = JSON.parse(await Deno.readTextFile(`${resumeFrom}/state.json`));
  start = state.step + 1;
  w = state.w;
  rng = state.rng;
  lines.push(JSON.stringify({ event: "loaded", step: state.step }));
}
for (let step = start; step <= stopAt; step++) {
  const x = next();
  w -= lr * (w - x);
  lines.push(JSON.stringify({ step, loss: w * w + x / 1000, lr }));
}
await Deno.writeTextFile(env("PARITY_METRICS_FILE"), lines.join("\n") + "\n", { append: true });
if (saveAt) {
  const root = env("PARITY_CHECKPOINT_DIR");
  await Deno.mkdir(`${root}/global_step${saveAt}`, { recursive: true });
  const state = { step: Number(saveAt), w, rng };
  await Deno.writeTextFile(`${root}/global_step${saveAt}/state.json`, JSON.stringify(state));
  await Deno.writeTextFile(`${root}/latest`, `global_step${saveAt}`);
  const saved = JSON.stringify({ event: "saved", step: Number(saveAt) });
  await Deno.writeTextFile(env("PARITY_METRICS_FILE"), saved + "\n", { append: true });
}

import { equal } from "node:assert/strict";
import { captureConsole } from "../../test/_testing/capture_console.ts";
import { contiguousSplitMap } from "../affine/map.ts";
import { planTransfers } from "../affine/plan_transfers.ts";
import { buildPlanFile, writePlanFile } from "../affine/plan_file.ts";
import { main } from "./main.ts";

Deno.test("parity verify-plan exits 0 for a good plan, 1 for a bad one, 2 for bad usage", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const pairs = {
      w: {
        source: contiguousSplitMap([8, 2], [4, 4], 0),
        target: contiguousSplitMap([8, 2], [2, 6], 0),
      },
    };
    const file = buildPlanFile(planTransfers(pairs, { elementSize: 4 }), {
      policy: "first_holder",
      pairs,
    });
    const good = `${dir}/good.json`, bad = `${dir}/bad.json`;
    await writePlanFile(good, file);
    const ok = await captureConsole(() => main(["verify-plan", good, "--execute"]));
    equal(ok.value, 0);
    equal(ok.all.startsWith(`OK ${good} (executed`), true);
    equal(/moved bytes\s+64 \(16 elements\)/.test(ok.all), true);
    file.parameters.w.segments.pop();
    await writePlanFile(bad, file);
    const no = await captureConsole(() => main(["verify-plan", bad]));
    equal(no.value, 1);
    equal(no.all.includes("REJECTED") && no.all.includes("written by no segment"), true);
    const json = await captureConsole(() => main(["verify-plan", bad, "--json"]));
    equal(JSON.parse(json.out).ok, false);
    equal((await captureConsole(() => main(["verify-plan"]))).value, 2);
    equal((await captureConsole(() => main(["verify-plan", good, "--fast"]))).value, 2);
    equal((await captureConsole(() => main(["verify-plan", `${dir}/missing.json`]))).value, 2);
    await Deno.writeTextFile(bad, "not json");
    equal((await captureConsole(() => main(["verify-plan", bad]))).value, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parity verify-plan rejects a non-finite or absurd element size, never OK with Infinity", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const pairs = {
      w: {
        source: contiguousSplitMap([8, 2], [4, 4], 0),
        target: contiguousSplitMap([8, 2], [2, 6], 0),
      },
    };
    const file = buildPlanFile(planTransfers(pairs, { elementSize: 4 }), {
      policy: "first_holder",
      pairs,
    });
    const path = `${dir}/plan.json`;
    for (const size of ["1e308", "1e400", "65", "-4", "2.5"]) {
      await writePlanFile(path, file);
      const text = await Deno.readTextFile(path);
      await Deno.writeTextFile(path, text.replace(/"element_size": 4/, `"element_size": ${size}`));
      const run = await captureConsole(() => main(["verify-plan", path]));
      equal(run.value, 1, `element_size ${size}`);
      equal(run.all.includes("element_size"), true, run.all);
      equal(/Infinity|NaN/.test(run.all), false, run.all);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

import { equal } from "node:assert/strict";
import { captureConsole } from "../_test_console.ts";
import { contiguousSplitMap } from "./map.ts";
import { planTransfers } from "./plan.ts";
import { buildPlanFile, writePlanFile } from "./plan_file.ts";
import { verifyPlanCommand } from "./cli.ts";

Deno.test("verifyPlanCommand() exits 0 for a good plan, 1 for a bad one, 2 for bad usage", async () => {
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
    const ok = await captureConsole(() => verifyPlanCommand([good, "--execute"]));
    equal(ok.value, 0);
    equal(ok.all.startsWith(`OK ${good} (executed`), true);
    equal(/moved bytes\s+64 \(16 elements\)/.test(ok.all), true);
    file.parameters.w.segments.pop();
    await writePlanFile(bad, file);
    const no = await captureConsole(() => verifyPlanCommand([bad]));
    equal(no.value, 1);
    equal(no.all.includes("REJECTED") && no.all.includes("written by no segment"), true);
    const json = await captureConsole(() => verifyPlanCommand([bad, "--json"]));
    equal(JSON.parse(json.out).ok, false);
    equal((await captureConsole(() => verifyPlanCommand([]))).value, 2);
    equal((await captureConsole(() => verifyPlanCommand([good, "--fast"]))).value, 2);
    equal((await captureConsole(() => verifyPlanCommand([`${dir}/missing.json`]))).value, 2);
    await Deno.writeTextFile(bad, "not json");
    equal((await captureConsole(() => verifyPlanCommand([bad]))).value, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

import assert from "node:assert/strict";
import { specStub } from "./_testing.ts";
import { launchOrder } from "./launch_order.ts";

const spec = specStub;

Deno.test("launchOrder offers the longest remaining chain first", () => {
  // The seed's shape: baseline 100, split 50 -> {native 50, convert -> universal 50}.
  const specs = [
    spec("baseline", "baseline", 100),
    spec("split", "split", 50),
    spec("resume-native", "resume", 100, ["split"]),
    spec("convert", "convert", 50, ["split"], "converter"),
    spec("resume-universal", "resume", 100, ["convert"]),
  ];
  // split's chain (50 + 1 + 50) outruns the baseline's 100; the convert chain outruns native.
  assert.deepEqual(launchOrder(specs, 50), [
    "split",
    "baseline",
    "convert",
    "resume-native",
    "resume-universal",
  ]);
});

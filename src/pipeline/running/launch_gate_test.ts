import assert from "node:assert/strict";
import { LaunchGate } from "./launch_gate.ts";

Deno.test("LaunchGate.settled() waits for every launch on its way, then resolves at once", async () => {
  const gate = new LaunchGate();
  const order: string[] = [];
  gate.begin("a");
  gate.begin("b");
  const settled = gate.settled().then(() => order.push("settled"));
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(order, [], "two launches are on their way");
  gate.end("a");
  gate.end("a"); // a second end of the same launch changes nothing
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(order, [], "one is still on its way");
  gate.end("b");
  await settled;
  assert.deepEqual(order, ["settled"]);
  await gate.settled(); // nothing on its way: resolves
});

Deno.test("LaunchGate.settled() counts a launch begun in the same task as the call", async () => {
  const gate = new LaunchGate();
  let done = false;
  const settled = gate.settled().then(() => done = true);
  gate.begin("next"); // the scheduler fills a freed slot after the caller asked
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(done, false);
  gate.end("next");
  await settled;
  assert.equal(done, true);
});

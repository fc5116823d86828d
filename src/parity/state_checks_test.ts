import assert from "node:assert/strict";
import { parseJsonl } from "../metrics/jsonl.ts";
import { jsonl } from "../../test/_testing/metrics_fixtures.ts";
import { checkRestoredState } from "./state_checks.ts";

const saved = (digests: Record<string, unknown>, step = 20) =>
  parseJsonl(jsonl([{ step: 1, loss: 1 }, { event: "saved", step, digests }]));
const loaded = (digests: Record<string, unknown>, step = 20) =>
  parseJsonl(jsonl([{ event: "loaded", step, digests }, { step: 21, loss: 1 }]));

Deno.test("checkRestoredState() passes equal digests per component", () => {
  const d = { params: "a", rng: { torch: "x", numpy: "y" } };
  const r = checkRestoredState("resume-native", saved(d), loaded(d), 20);
  assert.equal(r.verdict, "PASS");
  assert.deepEqual(r.compared, ["params", "rng"]);
});

Deno.test("checkRestoredState() names differing components and a wrong loaded step", () => {
  const r = checkRestoredState(
    "resume-universal",
    saved({ params: "a", exp_avg_sq: "v", rng: "r" }),
    loaded({ params: "a", exp_avg_sq: "w", rng: "r" }, 19),
    20,
  );
  assert.equal(r.verdict, "FAIL");
  assert.deepEqual(r.differing, ["step", "exp_avg_sq"]);
  assert.match(r.reason ?? "", /loaded step 19, saved step 20/);
});

Deno.test("checkRestoredState() is ERROR for a component only one side has", () => {
  const r = checkRestoredState("r", saved({ params: "a", rng: "r" }), loaded({ params: "a" }));
  assert.equal(r.verdict, "ERROR");
  assert.deepEqual(r.missing, ["rng"]);
});

Deno.test("checkRestoredState() is N/A, not PASS, without digests", () => {
  const none = parseJsonl(jsonl([{ event: "saved", step: 20 }, { step: 1, loss: 1 }]));
  const r = checkRestoredState("r", none, loaded({ params: "a" }));
  assert.deepEqual([r.verdict, r.available], ["N/A", false]);
  assert.match(r.reason ?? "", /split's saved event does not carry/);
  assert.equal(checkRestoredState("r", undefined, undefined).verdict, "N/A");
});

import assert from "node:assert/strict";
import type { Verdict } from "../types/summary.ts";
import {
  bisectReleases,
  compareReleases,
  formatPackageBisect,
  PackageBisectUsageError,
  parsePipVersions,
} from "./package_bisect.ts";

const RELEASES = ["0.18.5", "0.18.4", "0.18.3", "0.18.2", "0.18.1", "0.18.0", "0.17.6", "0.17.5"];

/** Runs the bisection over a verdict table, recording which releases ran. */
async function bisectTable(
  table: Record<string, Verdict>,
  good = "0.17.5",
  bad = "0.18.4",
) {
  table = { [good]: "PASS", ...table };
  const ran: string[] = [];
  const result = await bisectReleases({
    package: "deepspeed",
    good,
    bad,
    releases: [...RELEASES, "0.19.0rc1"],
    run: (version) => {
      ran.push(version);
      return Promise.resolve({
        verdict: table[version],
        ...(table[version] === "ERROR" ? { cannotRun: "resume-native failed (run FAIL)" } : {}),
      });
    },
    note: () => {},
  });
  return { result, ran };
}

Deno.test("parsePipVersions() reads pip index's release list; compareReleases() orders them", () => {
  const out = "deepspeed (0.18.5)\nAvailable versions: 0.18.5, 0.18.4, 0.9.0\n";
  assert.deepEqual(parsePipVersions(out), ["0.18.5", "0.18.4", "0.9.0"]);
  assert.deepEqual(parsePipVersions("nothing"), []);
  assert.deepEqual(["0.18.4", "0.9.0", "0.18.10"].sort(compareReleases), [
    "0.9.0",
    "0.18.4",
    "0.18.10",
  ]);
});

Deno.test("bisectReleases() names the first bad release in few runs", async () => {
  const { result, ran } = await bisectTable({
    "0.17.6": "PASS",
    "0.18.0": "FAIL",
    "0.18.1": "FAIL",
    "0.18.2": "FAIL",
    "0.18.3": "FAIL",
    "0.18.4": "FAIL",
  });
  assert.equal(result.outcome, "found");
  assert.equal(result.firstBad?.version, "0.18.0");
  assert.equal(result.lastGood, "0.17.6");
  assert.equal(result.exit_code, 0);
  assert.equal(ran[0], "0.17.5", "the good endpoint first");
  assert.ok(ran.length <= 4, `ran ${ran}`);
  assert.ok(!ran.includes("0.18.5") && !ran.includes("0.19.0rc1"), "outside the range");
});

Deno.test("bisectReleases() marks a release that cannot run as ERROR, never bad", async () => {
  // 0.17.6 crashes at load (an ERROR run): it is not the first bad release.
  const { result } = await bisectTable({
    "0.17.6": "ERROR",
    "0.18.0": "FAIL",
    "0.18.1": "FAIL",
    "0.18.2": "FAIL",
    "0.18.3": "FAIL",
    "0.18.4": "FAIL",
  });
  const step = result.steps.find((s) => s.version === "0.17.6");
  assert.equal(step?.mark, "ERROR");
  assert.equal(result.outcome, "found");
  assert.deepEqual(result.cannotRun, ["0.17.6"]);
  assert.equal(result.firstBad?.version, "0.18.0");
  assert.equal(result.exit_code, 0);
  const text = formatPackageBisect("deepspeed", result);
  assert.match(text, /first bad release deepspeed 0\.18\.0 \(last good 0\.17\.5/);
  assert.match(text, /cannot run \(ERROR, not bad\): 0\.17\.6/);
  assert.match(text, /ERROR deepspeed 0\.17\.6 +ERROR — resume-native failed \(run FAIL\)/);
});

Deno.test("bisectReleases() goes around a release that cannot run when others decide", async () => {
  const { result } = await bisectTable({
    "0.17.6": "PASS",
    "0.18.0": "PASS",
    "0.18.1": "ERROR",
    "0.18.2": "PASS",
    "0.18.3": "FAIL",
    "0.18.4": "FAIL",
  });
  assert.equal(result.outcome, "found");
  assert.equal(result.firstBad?.version, "0.18.3");
});

Deno.test("bisectReleases() is inconclusive when the bad endpoint cannot run", async () => {
  const { result } = await bisectTable(
    {
      "0.18.0": "ERROR",
      "0.18.1": "ERROR",
      "0.18.2": "ERROR",
      "0.18.3": "ERROR",
      "0.18.4": "ERROR",
    },
    "0.17.6",
    "0.18.4",
  );
  assert.equal(result.outcome, "ambiguous");
  assert.equal(result.exit_code, 3);
  assert.equal(result.firstBad, undefined);
  assert.equal(result.steps[0].mark, "good");
  assert.match(formatPackageBisect("deepspeed", result), /bad endpoint cannot run/);
});

Deno.test("bisectReleases() stops when the good endpoint does not PASS", async () => {
  const { result, ran } = await bisectTable({ "0.17.5": "ERROR" });
  assert.equal(result.outcome, "ambiguous");
  assert.deepEqual(ran, ["0.17.5"]);
  assert.match(
    formatPackageBisect("deepspeed", result),
    /good endpoint 0\.17\.5 does not PASS \(ERROR\)/,
  );
});

Deno.test("bisectReleases() refuses endpoints that are not published or out of order", async () => {
  await assert.rejects(() => bisectTable({}, "0.17.4", "0.18.4"), PackageBisectUsageError);
  await assert.rejects(() => bisectTable({}, "0.18.4", "0.17.5"), PackageBisectUsageError);
});

import assert from "node:assert/strict";
import { captureConsole } from "../../test/_testing/capture_console.ts";
import { jsonl, withTempDir } from "../../test/_testing/metrics_fixtures.ts";
import { main } from "./main.ts";

/** Runs `parity compare` capturing stdout and stderr. */
async function capture(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await captureConsole(() => main(["compare", ...args]));
  return { code: r.value, out: r.out, err: r.err };
}

const loss = (s: number) => 3 + Math.exp(-s / 9) + Math.cos(s) * 1e-3;

async function files(dir: string, change?: (s: number) => number | undefined) {
  const a = `${dir}/a.jsonl`;
  const b = `${dir}/b.jsonl`;
  const rows = (f: (s: number) => number | undefined) =>
    Array.from({ length: 10 }, (_, i) => i + 1).flatMap((s) => {
      const v = f(s);
      return v === undefined ? [] : [{ step: s, loss: v }];
    });
  await Deno.writeTextFile(a, jsonl(rows(loss)));
  await Deno.writeTextFile(b, jsonl(rows(change ?? loss)));
  return [a, b];
}

Deno.test("parity compare passes two identical JSONL files with exit 0", async () => {
  await withTempDir(async (dir) => {
    const [a, b] = await files(dir);
    const r = await capture([a, b]);
    assert.equal(r.code, 0);
    assert.match(r.out, /exact\s+1\.\.10\s+10\s+-\s+0\s+0\s+PASS/);
    assert.match(r.out, /tolerance\s+1\.\.10\s+10\s+-\s+0\s+0\s+PASS/);
    assert.match(r.out, /verdict: PASS/);
  });
});

Deno.test("parity compare prints the first divergent step with both values and exits 1", async () => {
  await withTempDir(async (dir) => {
    const [a, b] = await files(dir, (s) => (s >= 6 ? loss(s) * (1 + 1e-12) : loss(s)));
    const r = await capture([a, b, "--lane", "exact"]);
    assert.equal(r.code, 1);
    assert.ok(r.out.includes(`6 (${loss(6)} / ${loss(6) * (1 + 1e-12)})`), r.out);
    assert.match(r.out, /FAIL/);
    const both = await capture([a, b, "--json"]);
    const json = JSON.parse(both.out);
    assert.equal(both.code, 1, "the exact lane fails while the tolerance lane passes");
    assert.deepEqual(json.comparisons.map((c: { verdict: string }) => c.verdict), ["FAIL", "PASS"]);
    assert.equal(json.comparisons[0].first_divergent_step, 6);
    assert.equal(json.comparisons[0].last_matching_step, 5);
  });
});

Deno.test("parity compare fails a step missing from one file in the default union window", async () => {
  await withTempDir(async (dir) => {
    const [a, b] = await files(dir, (s) => (s === 4 ? undefined : loss(s)));
    const r = await capture([a, b, "--lane", "tolerance", "--max-failures", "3", "--json"]);
    assert.equal(r.code, 1);
    const c = JSON.parse(r.out).comparisons[0];
    assert.equal(c.missing_steps, 1);
    assert.equal(c.first_divergent_step, 4);
    const limited = await capture([a, b, "--from", "5", "--to", "10"]);
    assert.equal(limited.code, 0, "the window can exclude the gap");
  });
});

Deno.test("parity compare exits 3 on rounded metrics in the exact lane", async () => {
  await withTempDir(async (dir) => {
    const [a, b] = await files(dir);
    const rounded = (await Deno.readTextFile(a)).replace(/"loss":(\d+\.\d{4})\d*/g, '"loss":$1');
    await Deno.writeTextFile(a, rounded);
    await Deno.writeTextFile(b, rounded);
    const r = await capture([a, b, "--lane", "exact"]);
    assert.equal(r.code, 3);
    assert.match(r.out, /metrics are rounded/i);
    assert.match(r.out, /metrics-rounded/);
  });
});

Deno.test("parity compare exits 2 on usage errors", async () => {
  assert.equal((await capture(["only-one.jsonl"])).code, 2);
  assert.equal((await capture(["a", "b", "--lane", "fuzzy"])).code, 2);
  assert.equal((await capture(["a", "b", "--rtol", "-1"])).code, 2);
  const r = await capture(["a", "b", "--bogus"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /^parity compare: unknown option '--bogus'$/m);
  assert.equal((await capture(["--help"])).code, 0);
});

Deno.test("parity compare exits 2 on usage mistakes: missing file, inverted window, stray options", async () => {
  await withTempDir(async (dir) => {
    const [a, b] = await files(dir);
    const cases: [string[], RegExp][] = [
      [[a, `${dir}/none.jsonl`], /none\.jsonl: no such file or folder/],
      [[a, b, "--from", "8", "--to", "3"], /--from 8 is after --to 3/],
      [[a, b, "--pattern", "step (?<step>\\d+)"], /--pattern applies only to --format log/],
      [[a, b, "--samples-per-step", "8"], /apply only to --format deepspeed-csv/],
    ];
    for (const [args, message] of cases) {
      const r = await capture(args);
      assert.equal(r.code, 2, args.join(" "));
      assert.match(r.err, message);
    }
  });
});

Deno.test("parity compare compares a JSONL file with a csv_monitor folder", async () => {
  await withTempDir(async (dir) => {
    const [a] = await files(dir);
    await Deno.mkdir(`${dir}/csv`);
    const rows = Array.from({ length: 10 }, (_, i) => `${(i + 1) * 4},${loss(i + 1)}`);
    await Deno.writeTextFile(
      `${dir}/csv/Train_Samples_train_loss.csv`,
      `step,train_loss\n${rows.join("\n")}\n`,
    );
    const r = await capture([
      a,
      `${dir}/csv`,
      "--format-b",
      "deepspeed-csv",
      "--step-unit",
      "samples",
      "--samples-per-step",
      "4",
    ]);
    assert.equal(r.code, 0, r.out);
  });
});

Deno.test("parity compare judges a resume against a full baseline over the steps both span", async () => {
  await withTempDir(async (dir) => {
    const [a, b] = await files(dir, (s) => (s >= 6 ? loss(s) : undefined));
    const r = await capture([a, b, "--json"]);
    assert.equal(r.code, 0, r.out);
    const json = JSON.parse(r.out);
    assert.deepEqual(
      json.comparisons.map((
        c: { first_step: number; last_step: number },
      ) => [c.first_step, c.last_step]),
      [[6, 10], [6, 10]],
    );
    // A step missing inside the span still fails; --from widens the window on purpose.
    const [, gap] = await files(dir, (s) => (s >= 6 && s !== 8 ? loss(s) : undefined));
    const missing = await capture([a, gap, "--lane", "exact", "--json"]);
    assert.equal(missing.code, 1);
    assert.equal(JSON.parse(missing.out).comparisons[0].first_divergent_step, 8);
    const widened = await capture([a, b, "--lane", "exact", "--from", "1", "--json"]);
    assert.equal(JSON.parse(widened.out).comparisons[0].first_divergent_step, 1);
  });
});

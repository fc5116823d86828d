import assert from "node:assert/strict";
import { parseCpuList, pinToParityCpus } from "./cpu_affinity.ts";

/** This thread's allowed cores, as the kernel reports them. */
function allowedList(): string {
  const line = Deno.readTextFileSync("/proc/thread-self/status").split("\n")
    .find((l) => l.startsWith("Cpus_allowed_list:"))!;
  return line.split(":")[1].trim();
}

Deno.test("parseCpuList() reads the pool's share; unset is null; junk is refused", () => {
  assert.deepEqual(parseCpuList("3,1,1"), [1, 3]);
  assert.equal(parseCpuList(undefined), null);
  assert.equal(parseCpuList(""), null);
  assert.throws(() => parseCpuList("0-3"), /comma-separated core numbers/);
});

Deno.test({
  name: "pinToParityCpus() pins this thread to the cores it has and drops the others",
  ignore: Deno.build.os !== "linux",
  fn: () => {
    const warnings: string[] = [];
    const before = allowedList();
    const pinned = pinToParityCpus({ PARITY_CPUS: "0,4095" }, (l) => warnings.push(l));
    try {
      assert.deepEqual(pinned, [0]);
      assert.equal(allowedList(), "0");
      assert.match(warnings.join("\n"), /cores 4095 are not available here; pinned to 0/);
      assert.equal(pinToParityCpus({}, () => {}), null);
      assert.equal(pinToParityCpus({ PARITY_CPUS: "4095" }, (l) => warnings.push(l)), null);
      assert.match(warnings.at(-1)!, /has none of these cores; not pinned/);
    } finally {
      // Put the runner's thread back where it was (every core it had).
      const all = before.split(",").flatMap((r) => {
        const [a, b] = r.split("-").map(Number);
        return Array.from({ length: (b ?? a) - a + 1 }, (_, i) => a + i);
      });
      pinToParityCpus({ PARITY_CPUS: all.join(",") }, () => {});
    }
    assert.equal(allowedList(), before);
  },
});

import assert from "node:assert/strict";
import { deviceEnv, DevicePool } from "./device_pool.ts";

Deno.test("DevicePool hands out distinct ids, lowest first, while they last", () => {
  const pool = new DevicePool({ kind: "cuda", ids: [3, 1, 0, 2] });
  const a = pool.take(2)!;
  assert.deepEqual(a, [3, 1]); // the declared order
  assert.deepEqual(pool.take(3), null);
  const b = pool.take(2)!;
  assert.deepEqual(b, [0, 2]);
  assert.deepEqual(pool.take(1), null);
  assert.deepEqual(pool.take(0), []);
  pool.give(a);
  assert.deepEqual(pool.free, 2);
  assert.deepEqual(pool.take(2), [3, 1]);
  assert.throws(() => pool.give([9]), /not in the pool/);
});

Deno.test("deviceEnv: CUDA_VISIBLE_DEVICES for GPUs, PARITY_CPUS and a thread per core for CPUs", () => {
  assert.deepEqual(deviceEnv("cuda", [4, 5], 2), { CUDA_VISIBLE_DEVICES: "4,5" });
  assert.deepEqual(deviceEnv("cuda", [], 1), {});
  assert.deepEqual(deviceEnv("cpu", [0, 1, 2, 3], 2), {
    PARITY_CPUS: "0,1,2,3",
    OMP_NUM_THREADS: "2",
  });
  assert.deepEqual(deviceEnv("cpu", [1], 2), { PARITY_CPUS: "1", OMP_NUM_THREADS: "1" });
});

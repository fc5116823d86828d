/**
 * The device pool of one node (`devices:`): phases ask for their resolved number of devices
 * (`PhaseSpec.devices`) and get distinct ids, lowest first, while they last; the ids reach the
 * child as `CUDA_VISIBLE_DEVICES` (GPUs) or `PARITY_CPUS` with `OMP_NUM_THREADS` (CPU cores,
 * which a preset's trainer pins itself to with `sched_setaffinity`).
 *
 * @module
 */

import type { DevicePoolSpec } from "../../types/mod.ts";

/** Environment variable naming the CPU cores a phase may use (comma-separated core numbers). */
export const PARITY_CPUS = "PARITY_CPUS";

/** A node's devices, handed out to phases and taken back when they end. */
export class DevicePool {
  /** GPUs or CPU cores. */
  readonly kind: DevicePoolSpec["kind"];
  /** Every id of the pool. */
  readonly ids: readonly number[];
  #free: Set<number>;

  /** A pool of `spec.ids`, all free. */
  constructor(spec: DevicePoolSpec) {
    this.kind = spec.kind;
    this.ids = [...spec.ids];
    this.#free = new Set(spec.ids);
  }

  /** Devices free now. */
  get free(): number {
    return this.#free.size;
  }

  /**
   * Takes `count` free devices (lowest ids first), or returns null when fewer are free; a request
   * of 0 always gets `[]`. A request larger than the pool is refused by validation first.
   */
  take(count: number): number[] | null {
    if (count > this.#free.size) return null;
    const ids = this.ids.filter((id) => this.#free.has(id)).slice(0, count);
    for (const id of ids) this.#free.delete(id);
    return ids;
  }

  /** Gives `ids` back. */
  give(ids: readonly number[]): void {
    for (const id of ids) {
      if (!this.ids.includes(id)) throw new Error(`internal: device ${id} is not in the pool`);
      this.#free.add(id);
    }
  }
}

/**
 * The variables that confine a child to `ids`: `CUDA_VISIBLE_DEVICES` for GPUs; for CPU cores
 * `PARITY_CPUS` (the trainer pins itself) and `OMP_NUM_THREADS` (one thread per core it got;
 * several ranks share them). Nothing for a phase that took no device (a converter on a GPU
 * node): hiding every GPU from it could make a CUDA build of its tool fail to start.
 */
export function deviceEnv(
  kind: DevicePoolSpec["kind"],
  ids: readonly number[],
  ranks: number,
): Record<string, string> {
  if (ids.length === 0) return {};
  const list = ids.join(",");
  if (kind === "cuda") return { CUDA_VISIBLE_DEVICES: list };
  const threads = Math.max(1, Math.floor(ids.length / Math.max(1, ranks)));
  return { [PARITY_CPUS]: list, OMP_NUM_THREADS: String(threads) };
}

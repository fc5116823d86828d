/**
 * `PARITY_CPUS` for the reference trainer: a device pool's CPU share (`devices: {kind: cpu}`),
 * honoured by pinning the trainer's thread (it computes on one) with Linux's `sched_setaffinity`
 * through libc. The pool's ids may name more cores than this machine has (the harness's tests
 * pool eight on two): the cores it lacks are dropped with a warning, and with none left the
 * process stays unpinned, says so, and still computes the same bits (affinity only moves where it
 * runs). The DeepSpeed trainer is strict instead: its ranks need the cores they were given.
 *
 * @module
 */

/** The environment variable the harness's device pool sets (comma-separated core numbers). */
export const PARITY_CPUS_ENV = "PARITY_CPUS";

/** Core numbers of a `PARITY_CPUS` value; null when unset or empty. */
export function parseCpuList(text: string | undefined): number[] | null {
  if (text === undefined || text.trim() === "") return null;
  const ids = text.split(",").map((s) => s.trim());
  if (!ids.every((s) => /^\d+$/.test(s))) {
    throw new RangeError(`${PARITY_CPUS_ENV} must be comma-separated core numbers, got ${text}`);
  }
  return [...new Set(ids.map(Number))].sort((a, b) => a - b);
}

const MASK_BYTES = 128; // 1024 cores, glibc's cpu_set_t

function _libc() {
  return Deno.dlopen("libc.so.6", {
    sched_setaffinity: { parameters: ["i32", "usize", "buffer"], result: "i32" },
  });
}

/** The machine's online cores (`/sys/devices/system/cpu/online`: `0-3,6`). */
function _onlineCores(): Set<number> {
  let text: string;
  try {
    text = Deno.readTextFileSync("/sys/devices/system/cpu/online").trim();
  } catch {
    text = `0-${navigator.hardwareConcurrency - 1}`;
  }
  return new Set(
    text.split(",").flatMap((range) => {
      const [a, b] = range.split("-").map(Number);
      return Array.from({ length: (b ?? a) - a + 1 }, (_, i) => a + i);
    }),
  );
}

/**
 * Pins the calling thread to the cores of `PARITY_CPUS` this process may use; returns the cores
 * it pinned to (null: unset, not Linux, or none of them available), telling `warn` why not or
 * which it dropped.
 */
export function pinToParityCpus(
  env: Record<string, string | undefined>,
  warn: (line: string) => void,
): number[] | null {
  const wanted = parseCpuList(env[PARITY_CPUS_ENV]);
  if (wanted === null) return null;
  if (Deno.build.os !== "linux") {
    warn(`${PARITY_CPUS_ENV}=${wanted.join(",")} not applied: pinning is Linux-only`);
    return null;
  }
  const online = _onlineCores();
  const has = (id: number) => id < MASK_BYTES * 8 && online.has(id);
  const libc = _libc();
  try {
    const cores = wanted.filter(has);
    const lacking = wanted.filter((id) => !has(id));
    if (cores.length === 0) {
      warn(
        `${PARITY_CPUS_ENV}=${wanted.join(",")}: this machine has none of ` +
          "these cores; not pinned",
      );
      return null;
    }
    if (lacking.length > 0) {
      warn(
        `${PARITY_CPUS_ENV}: cores ${lacking.join(",")} are not available here; pinned to ` +
          cores.join(","),
      );
    }
    const mask = new Uint8Array(MASK_BYTES);
    for (const id of cores) mask[id >> 3] |= 1 << (id & 7);
    if (libc.symbols.sched_setaffinity(0, BigInt(MASK_BYTES), mask) !== 0) {
      warn(`${PARITY_CPUS_ENV} not applied: sched_setaffinity failed`);
      return null;
    }
    return cores;
  } finally {
    libc.close();
  }
}

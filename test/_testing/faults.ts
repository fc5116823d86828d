/**
 * Helpers for fault tests: damage a file the way storage does, and find what a killed harness
 * left behind (stray `*.tmp` files, lock files, processes of a results folder).
 *
 * @module
 */

/** Flips one bit in the middle of `path` in place and puts its mtime back, as silent bit rot would. */
export async function flipBitKeepingMtime(path: string): Promise<void> {
  const info = await Deno.stat(path);
  const bytes = await Deno.readFile(path);
  bytes[Math.floor(bytes.length / 2)] ^= 0x04;
  await Deno.writeFile(path, bytes);
  await Deno.utime(path, info.atime ?? new Date(), info.mtime!);
}

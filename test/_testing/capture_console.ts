/**
 * Test helper: runs a command function while capturing what it prints, so CLI-level tests can
 * assert on messages without noise in the test output.
 *
 * @module
 */

/** What a captured call returned and printed. */
export interface Captured<T> {
  /** The function's result (an exit code, usually). */
  value: T;
  /** Lines printed with console.log, joined by newlines. */
  out: string;
  /** Lines printed with console.error, joined by newlines. */
  err: string;
  /** Both streams interleaved in the order printed. */
  all: string;
}

/** Calls `fn` with console.log and console.error captured, restoring them afterwards. */
export async function captureConsole<T>(fn: () => Promise<T>): Promise<Captured<T>> {
  const { log, error } = console;
  const out: string[] = [], err: string[] = [], all: string[] = [];
  console.log = (...args: unknown[]) => void [out, all].forEach((s) => s.push(args.join(" ")));
  console.error = (...args: unknown[]) => void [err, all].forEach((s) => s.push(args.join(" ")));
  try {
    const value = await fn();
    return { value, out: out.join("\n"), err: err.join("\n"), all: all.join("\n") };
  } finally {
    console.log = log;
    console.error = error;
  }
}

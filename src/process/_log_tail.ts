/**
 * A bounded tail of recent output lines, used to put "what the child said last" into a failure
 * message without keeping the whole log in memory.
 *
 * @module
 */

/** Default number of lines a {@linkcode LogTail} keeps. */
const TAIL_MAX_LINES = 40;
/** Default cap, in UTF-16 code units, on the joined tail text. */
const TAIL_MAX_CHARS = 4096;
/** Longest single line kept; longer lines are cut (progress bars and tensor dumps can be huge). */
export const TAIL_MAX_LINE_CHARS = 512;

/** Ring of the last lines seen (from any stream, in arrival order), capped by count and size. */
export class LogTail {
  #lines: string[] = [];
  #chars = 0;
  readonly #maxLines: number;
  readonly #maxChars: number;

  /** Create a tail keeping at most `maxLines` lines and about `maxChars` characters. */
  constructor(maxLines = TAIL_MAX_LINES, maxChars = TAIL_MAX_CHARS) {
    this.#maxLines = maxLines;
    this.#maxChars = maxChars;
  }

  /** Append one line (without its newline). */
  add(line: string): void {
    const kept = line.length > TAIL_MAX_LINE_CHARS
      ? line.slice(0, TAIL_MAX_LINE_CHARS) + "…[cut]"
      : line;
    this.#lines.push(kept);
    this.#chars += kept.length + 1;
    while (
      this.#lines.length > this.#maxLines ||
      (this.#chars > this.#maxChars && this.#lines.length > 1)
    ) {
      const dropped = this.#lines.shift()!;
      this.#chars -= dropped.length + 1;
    }
  }

  /** The kept lines joined with `\n` (no trailing newline); empty when nothing was seen. */
  text(): string {
    return this.#lines.join("\n");
  }
}

/**
 * Up to the last `maxBytes` of a log file, whole lines only and without trailing blank space;
 * empty when the file cannot be read. Only the end is read, however large the log.
 */
export async function fileTail(path: string, maxBytes = 2048): Promise<string> {
  try {
    using file = await Deno.open(path);
    const size = (await file.stat()).size;
    const start = Math.max(0, size - maxBytes);
    await file.seek(start, Deno.SeekMode.Start);
    const buf = new Uint8Array(size - start);
    let read = 0;
    while (read < buf.length) {
      const n = await file.read(buf.subarray(read));
      if (n === null) break;
      read += n;
    }
    const text = new TextDecoder().decode(buf.subarray(0, read));
    // A cut first line is dropped: the tail starts at a line boundary.
    return (start > 0 ? text.slice(text.indexOf("\n") + 1) : text).trimEnd();
  } catch {
    return "";
  }
}

/**
 * Splits decoded text chunks into lines, keeping the unterminated tail until more text (or the
 * end of the stream) arrives.
 *
 * @module
 */

/** Incremental splitter of text into lines on `\n`; a trailing `\r` is dropped from each line. */
export class LineSplitter {
  #pending = "";

  /** Feed one chunk; returns the lines it completed (possibly none). */
  push(chunk: string): string[] {
    if (chunk === "") return [];
    const text = this.#pending + chunk;
    const parts = text.split("\n");
    this.#pending = parts.pop() ?? "";
    return parts.map(stripCarriageReturn);
  }

  /** End of stream: returns the unterminated last line, or `null` when there is none. */
  flush(): string | null {
    if (this.#pending === "") return null;
    const line = stripCarriageReturn(this.#pending);
    this.#pending = "";
    return line;
  }
}

function stripCarriageReturn(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}

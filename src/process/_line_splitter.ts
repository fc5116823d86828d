/**
 * Splits decoded text chunks into lines in time linear in the bytes, however long a line is:
 * only the new chunk is scanned, and an unterminated line is kept as a list of pieces joined
 * once. `\n`, `\r\n` and a lone `\r` (a progress bar redrawing itself) each end a line. A line
 * longer than the maximum is cut: its first `maxLineChars` characters are returned and the rest
 * is dropped, counted in {@linkcode LineSplitter.truncatedLines}.
 *
 * @module
 */

/** Default longest line kept whole: 1 MiB of text. */
const DEFAULT_MAX_LINE_CHARS = 1 << 20;

/** Incremental, linear-time splitter of text into lines (see the module documentation). */
export class LineSplitter {
  #pieces: string[] = [];
  #pendingChars = 0;
  #dropping = false;
  #afterCr = false;
  readonly #maxLineChars: number;
  /** How many lines were longer than the maximum and were cut. */
  truncatedLines = 0;

  /** Create a splitter keeping at most `maxLineChars` characters of each line. */
  constructor(maxLineChars: number = DEFAULT_MAX_LINE_CHARS) {
    this.#maxLineChars = maxLineChars;
  }

  /** Feed one chunk; returns the lines it completed (possibly none). */
  push(chunk: string): string[] {
    const lines: string[] = [];
    const length = chunk.length;
    let start = 0;
    if (this.#afterCr && chunk.charCodeAt(0) === 10) start = 1; // a \r\n split across chunks
    if (length > 0) this.#afterCr = false;
    // The next \n and \r, each searched again only once passed: every character is scanned once.
    let lf = chunk.indexOf("\n", start);
    let cr = chunk.indexOf("\r", start);
    while (lf >= 0 || cr >= 0) {
      const end = cr < 0 || (lf >= 0 && lf < cr) ? lf : cr;
      this.#keep(chunk.slice(start, end));
      lines.push(this.#take());
      start = end + 1;
      if (end === cr) {
        if (lf === end + 1) start = end + 2;
        else if (start === length) this.#afterCr = true;
        cr = chunk.indexOf("\r", start);
      }
      if (lf >= 0 && lf < start) lf = chunk.indexOf("\n", start);
    }
    if (start < length) this.#keep(start === 0 ? chunk : chunk.slice(start));
    return lines;
  }

  /** End of stream: returns the unterminated last line, or `null` when there is none. */
  flush(): string | null {
    this.#afterCr = false;
    if (this.#pendingChars === 0 && !this.#dropping) return null;
    return this.#take();
  }

  #keep(text: string): void {
    if (text === "" || this.#dropping) return;
    const room = this.#maxLineChars - this.#pendingChars;
    if (text.length > room) {
      text = text.slice(0, room);
      this.#dropping = true;
    }
    this.#pieces.push(text);
    this.#pendingChars += text.length;
  }

  #take(): string {
    const line = this.#pieces.length === 1 ? this.#pieces[0] : this.#pieces.join("");
    if (this.#dropping) this.truncatedLines++;
    this.#pieces = [];
    this.#pendingChars = 0;
    this.#dropping = false;
    return line;
  }
}

/** One framed line: its text, or why it has none. `head` is the start of the line, for error replies. */
export type FramedLine =
  | { kind: 'line'; text: string }
  | { kind: 'too_long'; head: string; bytes: number }
  | { kind: 'invalid_utf8'; head: string };

const NEWLINE = 0x0a;

/**
 * Splits a byte stream into newline-terminated lines of at most `maxLineBytes` bytes. A longer
 * line is reported once and skipped up to its newline while keeping only its first `headBytes`
 * bytes, so a script writing one huge line cannot grow the gateway's memory.
 */
export class LineFramer {
  readonly #maxLineBytes: number;
  readonly #headBytes: number;
  readonly #decoder = new TextDecoder('utf-8', { fatal: true });
  #parts: Uint8Array[] = [];
  #length = 0;
  /** Set while skipping an over-long line: its head and how many bytes it has had so far. */
  #skipping: { head: Uint8Array; bytes: number } | undefined;

  constructor(maxLineBytes: number, headBytes = 256) {
    if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 1) throw new TypeError('maxLineBytes must be positive');
    this.#maxLineBytes = maxLineBytes;
    this.#headBytes = Math.min(headBytes, maxLineBytes);
  }

  /** Feeds bytes; returns the lines they completed, in order. */
  push(chunk: Uint8Array): FramedLine[] {
    const lines: FramedLine[] = [];
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      this.#append(chunk.subarray(start, end));
      if (newline === -1) break;
      lines.push(this.#finishLine());
      start = newline + 1;
    }
    return lines;
  }

  /** At end of stream: a last line without a newline still counts. */
  end(): FramedLine[] {
    return this.#length > 0 || this.#skipping ? [this.#finishLine()] : [];
  }

  #append(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    if (this.#skipping) {
      this.#skipping.bytes += bytes.length;
      return;
    }
    if (this.#length + bytes.length > this.#maxLineBytes) {
      const head = this.#concat().subarray(0, this.#headBytes);
      const missing = this.#headBytes - head.length;
      const fullHead = missing > 0 ? concatBytes([head, bytes.subarray(0, missing)]) : head;
      this.#skipping = { head: fullHead.slice(), bytes: this.#length + bytes.length };
      this.#parts = [];
      this.#length = 0;
      return;
    }
    // Copy: the caller may reuse its buffer.
    this.#parts.push(bytes.slice());
    this.#length += bytes.length;
  }

  #finishLine(): FramedLine {
    if (this.#skipping) {
      const { head, bytes } = this.#skipping;
      this.#skipping = undefined;
      return { kind: 'too_long', head: lenientText(head), bytes };
    }
    const line = this.#concat();
    this.#parts = [];
    this.#length = 0;
    try {
      return { kind: 'line', text: this.#decoder.decode(line) };
    } catch {
      return { kind: 'invalid_utf8', head: lenientText(line.subarray(0, this.#headBytes)) };
    }
  }

  #concat(): Uint8Array {
    return this.#parts.length === 1 && this.#parts[0] ? this.#parts[0] : concatBytes(this.#parts);
  }
}

function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  const out = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function lenientText(bytes: Uint8Array): string {
  return new TextDecoder('utf-8').decode(bytes);
}

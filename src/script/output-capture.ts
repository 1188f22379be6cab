import type { Writable } from 'node:stream';

export interface OutputCaptureOptions {
  /** Characters kept from the start (the model sees at most this much). */
  headChars: number;
  /** Bytes kept from the end (for a traceback on stderr). */
  tailBytes: number;
  /** Past this many bytes the stream counts as overflowing: nothing more is written and `onOverflow` runs once. */
  maxBytes: number;
  /** The full stream goes here (a record file), up to `maxBytes`. */
  sink: Writable;
  onOverflow: () => void;
}

/**
 * Takes one output stream of the script: streams it to a file and keeps only a bounded head and
 * tail in memory, so a script printing a gigabyte does not grow the gateway.
 */
export class OutputCapture {
  readonly #options: OutputCaptureOptions;
  readonly #headBytes: number;
  #head: Uint8Array[] = [];
  #headLength = 0;
  #tail: Buffer = Buffer.alloc(0);
  #bytes = 0;
  #chars = 0;
  #overflowed = false;

  constructor(options: OutputCaptureOptions) {
    this.#options = options;
    // A character is at most 4 bytes of UTF-8.
    this.#headBytes = options.headChars * 4;
  }

  /** Takes a chunk; false when the sink is full and the producer should pause until it drains. */
  write(chunk: Buffer): boolean {
    if (this.#overflowed) return true;
    const room = this.#options.maxBytes - this.#bytes;
    const accepted = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.#bytes += accepted.length;
    this.#chars += countCodePoints(accepted);
    if (this.#headLength < this.#headBytes) {
      const part = accepted.subarray(0, this.#headBytes - this.#headLength);
      this.#head.push(Buffer.from(part));
      this.#headLength += part.length;
    }
    this.#tail = tailOf(this.#tail, accepted, this.#options.tailBytes);
    const { sink } = this.#options;
    const flowing = accepted.length === 0 || sink.destroyed ? true : sink.write(accepted);
    if (accepted.length < chunk.length) {
      this.#overflowed = true;
      this.#options.onOverflow();
    }
    return flowing;
  }

  /** Calls `callback` once the sink can take more (or has failed, so that the producer never stays paused). */
  onceWritable(callback: () => void): void {
    const { sink } = this.#options;
    const done = (): void => {
      sink.off('drain', done);
      sink.off('error', done);
      callback();
    };
    sink.once('drain', done);
    sink.once('error', done);
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Unicode code points seen (continuation bytes are not counted). */
  get chars(): number {
    return this.#chars;
  }

  get overflowed(): boolean {
    return this.#overflowed;
  }

  /** The first `headChars` characters. */
  head(): string {
    const text = new TextDecoder('utf-8').decode(Buffer.concat(this.#head));
    return Array.from(text).slice(0, this.#options.headChars).join('');
  }

  /** The last `tailBytes` bytes as text (a character cut at the start shows as U+FFFD). */
  tail(): string {
    return new TextDecoder('utf-8').decode(this.#tail);
  }
}

function tailOf(tail: Buffer, chunk: Buffer, max: number): Buffer {
  if (chunk.length >= max) return Buffer.from(chunk.subarray(chunk.length - max));
  const joined = Buffer.concat([tail, chunk]);
  return joined.length > max ? Buffer.from(joined.subarray(joined.length - max)) : joined;
}

function countCodePoints(bytes: Uint8Array): number {
  let count = 0;
  for (let index = 0; index < bytes.length; index++) if (((bytes[index] ?? 0) & 0xc0) !== 0x80) count += 1;
  return count;
}

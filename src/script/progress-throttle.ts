/** Calls `emit` at most once per `intervalMs` while things change, and once more at the end. */
export class ProgressThrottle {
  readonly #intervalMs: number;
  readonly #emit: () => void;
  #lastEmit = -Infinity;
  #timer: NodeJS.Timeout | undefined;
  #finished = false;

  constructor(intervalMs: number, emit: () => void) {
    this.#intervalMs = intervalMs;
    this.#emit = emit;
  }

  /** Something changed: emit now, or when the interval since the last emit is over. */
  changed(): void {
    if (this.#finished || this.#timer) return;
    const wait = this.#lastEmit + this.#intervalMs - performance.now();
    if (wait <= 0) {
      this.#fire();
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#fire();
    }, wait);
  }

  /** The final emit; nothing is emitted after it. */
  finish(): void {
    if (this.#finished) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#fire();
    this.#finished = true;
  }

  #fire(): void {
    this.#lastEmit = performance.now();
    this.#emit();
  }
}

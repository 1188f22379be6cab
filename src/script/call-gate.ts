/**
 * The per-script call limits: at most `maxCalls` calls in total (later ones are refused) and at
 * most `concurrency` running at once (later ones wait in order, they are not refused).
 */
export class CallGate {
  readonly #maxCalls: number;
  readonly #concurrency: number;
  readonly #waiting: (() => void)[] = [];
  #admitted = 0;
  #running = 0;
  #maxRunning = 0;

  constructor(maxCalls: number, concurrency: number) {
    if (!Number.isSafeInteger(maxCalls) || maxCalls < 0) throw new TypeError('maxCalls must be a non-negative integer');
    if (!Number.isSafeInteger(concurrency) || concurrency < 1) throw new TypeError('concurrency must be positive');
    this.#maxCalls = maxCalls;
    this.#concurrency = concurrency;
  }

  /** Counts a call against the total; false once the total is used up. */
  admit(): boolean {
    if (this.#admitted >= this.#maxCalls) return false;
    this.#admitted += 1;
    return true;
  }

  /** Runs `task` when a slot is free. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#concurrency) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#running += 1;
    }
    this.#maxRunning = Math.max(this.#maxRunning, this.#running);
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      // The slot passes straight to the next waiter, so #running stays the same.
      if (next) next();
      else this.#running -= 1;
    }
  }

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#waiting.length;
  }

  /** The most calls that ever ran at once. */
  get maxRunning(): number {
    return this.#maxRunning;
  }
}

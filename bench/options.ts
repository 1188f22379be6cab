/** What every measurement is told about the run. */
export interface BenchOptions {
  /** Fewer repetitions and smaller sizes, so the whole run stays under two minutes. */
  quick: boolean;
}

/** Picks the quick or the full value of a size or repetition count. */
export function sized<T>(options: BenchOptions, quick: T, full: T): T {
  return options.quick ? quick : full;
}

/** Order statistics of a set of samples: what every figure in the report is made of. */
export interface Summary {
  count: number;
  min: number;
  max: number;
  mean: number;
  median: number;
  p50: number;
  p95: number;
  p99: number;
}

/** The q-quantile (0..1) of sorted samples, linearly interpolated between the two nearest ranks. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) throw new RangeError('quantile of no samples');
  if (!(q >= 0 && q <= 1)) throw new RangeError(`quantile must be within 0..1, got ${q}`);
  const position = (sorted.length - 1) * q;
  const lower = Math.floor(position);
  const upper = Math.ceil(position);
  const low = sorted[lower] as number;
  const high = sorted[upper] as number;
  return low + (high - low) * (position - lower);
}

export function summarize(samples: readonly number[]): Summary {
  if (samples.length === 0) throw new RangeError('summarize needs at least one sample');
  const sorted = [...samples].sort((a, b) => a - b);
  const median = quantile(sorted, 0.5);
  return {
    count: sorted.length,
    min: sorted[0] as number,
    max: sorted[sorted.length - 1] as number,
    mean: sorted.reduce((sum, value) => sum + value, 0) / sorted.length,
    median,
    p50: median,
    p95: quantile(sorted, 0.95),
    p99: quantile(sorted, 0.99),
  };
}

/** Rounds to a precision that suits the magnitude: 1234, 123, 12.3, 1.23. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const magnitude = Math.abs(value);
  if (magnitude >= 1000) return Math.round(value).toLocaleString('en-US');
  if (magnitude >= 100) return value.toFixed(0);
  if (magnitude >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** `median (min–max)` with a unit, the shape of every noisy figure in the report. */
export function formatSpread(summary: Summary, unit: string): string {
  return `${formatNumber(summary.median)} ${unit} (${formatNumber(summary.min)}–${formatNumber(summary.max)})`;
}

export function formatRatio(value: number): string {
  return `${value.toFixed(2)}×`;
}

import { describe, expect, it } from 'vitest';
import { replaceReadmeSection } from '../bench/report.js';
import { formatNumber, formatRatio, formatSpread, quantile, summarize } from '../bench/stats.js';

describe('bench statistics', () => {
  it('interpolates quantiles between ranks', () => {
    const sorted = [10, 20, 30, 40];
    expect(quantile(sorted, 0)).toBe(10);
    expect(quantile(sorted, 1)).toBe(40);
    expect(quantile(sorted, 0.5)).toBe(25);
    expect(quantile(sorted, 0.95)).toBeCloseTo(38.5);
    expect(quantile([7], 0.99)).toBe(7);
  });

  it('summarises unsorted samples without changing them', () => {
    const samples = [5, 1, 4, 2, 3];
    const summary = summarize(samples);
    expect(samples).toEqual([5, 1, 4, 2, 3]);
    expect(summary).toMatchObject({ count: 5, min: 1, max: 5, mean: 3, median: 3, p50: 3 });
    expect(summary.p95).toBeCloseTo(4.8);
    expect(summary.p99).toBeCloseTo(4.96);
  });

  it('refuses empty samples and quantiles outside 0..1', () => {
    expect(() => summarize([])).toThrow(RangeError);
    expect(() => quantile([1, 2], 1.5)).toThrow(RangeError);
    expect(() => quantile([], 0.5)).toThrow(RangeError);
  });

  it('formats figures to a precision that suits their size', () => {
    expect(formatNumber(12_345.6)).toBe('12,346');
    expect(formatNumber(123.4)).toBe('123');
    expect(formatNumber(12.34)).toBe('12.3');
    expect(formatNumber(1.234)).toBe('1.23');
    expect(formatSpread(summarize([1, 2, 30]), 'ms')).toBe('2.00 ms (1.00–30.0)');
    expect(formatRatio(1.234)).toBe('1.23×');
  });
});

describe('the README benchmarks section', () => {
  it('appends the section when absent and replaces only its body when present', () => {
    const appended = replaceReadmeSection('# t\n\n## Why\n\ntext\n', 'first');
    expect(appended).toBe('# t\n\n## Why\n\ntext\n\n## Benchmarks\n\nfirst\n');
    const middle = '# t\n\n## Benchmarks\n\nold\n| a |\n\n## Security\n\nkept\n';
    expect(replaceReadmeSection(middle, 'new')).toBe('# t\n\n## Benchmarks\n\nnew\n\n## Security\n\nkept\n');
    expect(replaceReadmeSection(appended, 'second')).toBe('# t\n\n## Why\n\ntext\n\n## Benchmarks\n\nsecond\n');
  });
});

import { describe, expect, it } from 'vitest';
import { fitResult } from './fit-result.js';
import { normaliseResult, summariseResult } from './normalise-result.js';

describe('fitResult', () => {
  it('keeps a result that fits', () => {
    const fitted = fitResult({ text: 'abc', structured: { a: 1 }, isError: false }, 10, '.agent/results/x.json');
    expect(fitted).toEqual({ text: 'abc', structured: { a: 1 }, cut: false });
  });
  it('cuts a long text and names the full copy', () => {
    const fitted = fitResult(
      { text: 'x'.repeat(50), structured: undefined, isError: false },
      10,
      '.agent/results/1.json',
    );
    expect(fitted.cut).toBe(true);
    expect(fitted.text.startsWith('x'.repeat(10) + '\n')).toBe(true);
    expect(fitted.text).toContain('cut at 10 of 50 characters');
    expect(fitted.text).toContain('.agent/results/1.json');
  });
  it('cuts when only the structured content is large', () => {
    const fitted = fitResult({ text: 'ok', structured: { big: 'y'.repeat(100) }, isError: false }, 20, 'p');
    expect(fitted.cut).toBe(true);
    expect(fitted.structured).toBeUndefined();
  });
});

describe('normaliseResult', () => {
  it('joins text blocks, describes others, and keeps structured content', () => {
    const result = normaliseResult({
      content: [
        { type: 'text', text: 'one' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        { type: 'resource_link', uri: 'file:///x', name: 'x' },
      ],
      structuredContent: { a: 1 },
      isError: true,
    });
    expect(result).toEqual({
      text: 'one\n[image image/png, 3 bytes]\n[resource link file:///x]',
      structured: { a: 1 },
      isError: true,
    });
    expect(summariseResult(result)).toMatch(/^error: one/);
  });
  it('falls back to the JSON of structured content when there is no text', () => {
    expect(normaliseResult({ content: [], structuredContent: { b: 2 } }).text).toBe('{"b":2}');
  });
});

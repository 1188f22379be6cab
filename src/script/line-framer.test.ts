import { describe, expect, test } from 'vitest';
import { LineFramer } from './line-framer.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('LineFramer', () => {
  test('splits lines across chunks and keeps a partial line for later', () => {
    const framer = new LineFramer(100);
    expect(framer.push(bytes('{"a":1}\n{"b"'))).toEqual([{ kind: 'line', text: '{"a":1}' }]);
    expect(framer.push(bytes(':2}\n\n'))).toEqual([
      { kind: 'line', text: '{"b":2}' },
      { kind: 'line', text: '' },
    ]);
    expect(framer.push(bytes('tail'))).toEqual([]);
    expect(framer.end()).toEqual([{ kind: 'line', text: 'tail' }]);
    expect(framer.end()).toEqual([]);
  });

  test('a multi-byte character split between chunks is decoded whole', () => {
    const framer = new LineFramer(100);
    const all = bytes('héllo €\n');
    expect(framer.push(all.subarray(0, 2))).toEqual([]);
    expect(framer.push(all.subarray(2, 7))).toEqual([]);
    expect(framer.push(all.subarray(7))).toEqual([{ kind: 'line', text: 'héllo €' }]);
  });

  test('an over-long line is reported once with its head, skipped to its newline, and framing goes on', () => {
    const framer = new LineFramer(16, 8);
    const out = [
      ...framer.push(bytes('{"id":7,"op":"call"')),
      ...framer.push(bytes('x'.repeat(1000))),
      ...framer.push(bytes('yyy\n{"ok":1}\n')),
    ];
    expect(out).toEqual([
      { kind: 'too_long', head: '{"id":7,', bytes: 19 + 1000 + 3 },
      { kind: 'line', text: '{"ok":1}' },
    ]);
  });

  test('does not buffer an over-long line', () => {
    const framer = new LineFramer(1024);
    const chunk = new Uint8Array(1024 * 1024).fill(0x61);
    for (let index = 0; index < 50; index++) expect(framer.push(chunk)).toEqual([]);
    // Only the head survives: the report after 50 MB carries 256 bytes.
    const [line] = framer.push(bytes('\n'));
    expect(line).toEqual({ kind: 'too_long', head: 'a'.repeat(256), bytes: 50 * 1024 * 1024 });
  });

  test('a line exactly at the cap is fine, one byte more is too long', () => {
    const framer = new LineFramer(4);
    expect(framer.push(bytes('abcd\nabcde\n'))).toEqual([
      { kind: 'line', text: 'abcd' },
      { kind: 'too_long', head: 'abcd', bytes: 5 },
    ]);
  });

  test('invalid UTF-8 is reported, not thrown, and the next line is fine', () => {
    const framer = new LineFramer(100);
    const broken = new Uint8Array([...bytes('{"id":3,"x":"'), 0xff, 0xfe, ...bytes('"}\nok\n')]);
    const [first, second] = framer.push(broken);
    expect(first?.kind).toBe('invalid_utf8');
    expect(first?.kind === 'invalid_utf8' && first.head.startsWith('{"id":3,')).toBe(true);
    expect(second).toEqual({ kind: 'line', text: 'ok' });
  });

  test('copies input, so a reused buffer does not change a pending line', () => {
    const framer = new LineFramer(100);
    const buffer = bytes('abc');
    framer.push(buffer);
    buffer.fill(0x7a);
    expect(framer.push(bytes('\n'))).toEqual([{ kind: 'line', text: 'abc' }]);
  });
});

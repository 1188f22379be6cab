import { Writable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { OutputCapture } from './output-capture.js';

function collector(): { sink: Writable; written: () => string } {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      callback();
    },
  });
  return { sink, written: () => Buffer.concat(chunks).toString('utf8') };
}

describe('OutputCapture', () => {
  test('keeps a head of N characters and the tail, streams everything to the sink', () => {
    const { sink, written } = collector();
    const capture = new OutputCapture({
      headChars: 5,
      tailBytes: 4,
      maxBytes: 1000,
      sink,
      onOverflow: () => undefined,
    });
    capture.write(Buffer.from('héllo wörld\n'));
    capture.write(Buffer.from('end\n'));
    expect(capture.head()).toBe('héllo');
    expect(capture.tail()).toBe('end\n');
    expect(capture.chars).toBe(16);
    expect(capture.bytes).toBe(18);
    expect(written()).toBe('héllo wörld\nend\n');
  });

  test('stops at maxBytes and reports the overflow once', () => {
    const { sink, written } = collector();
    let overflows = 0;
    const capture = new OutputCapture({
      headChars: 100,
      tailBytes: 10,
      maxBytes: 8,
      sink,
      onOverflow: () => overflows++,
    });
    capture.write(Buffer.from('12345'));
    capture.write(Buffer.from('67890'));
    capture.write(Buffer.from('more'));
    expect(overflows).toBe(1);
    expect(capture.overflowed).toBe(true);
    expect(written()).toBe('12345678');
    expect(capture.bytes).toBe(8);
  });
});

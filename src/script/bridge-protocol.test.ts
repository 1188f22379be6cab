import { describe, expect, test } from 'vitest';
import { GatewayError } from '../errors/gateway-error.js';
import { parseRequestLine, recoverRequestId, toToolError } from './bridge-protocol.js';

const line = (text: string) => ({ kind: 'line' as const, text });

describe('parseRequestLine', () => {
  test('a call and a progress report', () => {
    expect(parseRequestLine(line('{"id":1,"op":"call","tool":"fleet__get","args":{"sn":"A"}}'), 100)).toEqual({
      kind: 'call',
      request: { id: 1, op: 'call', tool: 'fleet__get', args: { sn: 'A' } },
    });
    expect(parseRequestLine(line('{"id":2,"op":"progress","done":3,"total":10,"message":"m"}'), 100)).toEqual({
      kind: 'progress',
      request: { id: 2, op: 'progress', done: 3, total: 10, message: 'm' },
    });
    expect(parseRequestLine(line('  '), 100)).toEqual({ kind: 'empty' });
  });

  test('garbage gets an error for the id it names, or none when there is no id', () => {
    expect(parseRequestLine(line('hello'), 100)).toMatchObject({ kind: 'invalid', id: null, code: 'invalid_args' });
    expect(parseRequestLine(line('{"id":9,"op":"call","tool":'), 100)).toMatchObject({ kind: 'invalid', id: 9 });
    expect(parseRequestLine(line('{"id":4,"op":"call","tool":"t","args":[1]}'), 100)).toMatchObject({
      kind: 'invalid',
      id: 4,
      code: 'invalid_args',
    });
    expect(parseRequestLine(line('{"id":5,"op":"rm -rf"}'), 100)).toMatchObject({ kind: 'invalid', id: 5 });
    expect(parseRequestLine(line('{"id":-1,"op":"call"}'), 100)).toMatchObject({ kind: 'invalid', id: null });
    expect(parseRequestLine(line('[1,2]'), 100)).toMatchObject({ kind: 'invalid', id: null });
  });

  test('too long and invalid UTF-8 keep the id from the head', () => {
    expect(parseRequestLine({ kind: 'too_long', head: '{"id":12,"op":"call",', bytes: 5000 }, 1024)).toEqual({
      kind: 'invalid',
      id: 12,
      code: 'limit',
      message: 'request line of 5000 bytes is over the limit of 1024 bytes',
    });
    expect(parseRequestLine({ kind: 'invalid_utf8', head: '{"id":13,"x":"\ufffd' }, 100)).toMatchObject({
      kind: 'invalid',
      id: 13,
      code: 'invalid_args',
    });
  });

  test('recoverRequestId needs "id" first and a safe integer', () => {
    expect(recoverRequestId('{"id": 77, "op"')).toBe(77);
    expect(recoverRequestId('{"op":"call","id":1}')).toBeNull();
    expect(recoverRequestId('{"id":99999999999999999}')).toBeNull();
  });
});

describe('toToolError', () => {
  test('maps gateway codes to ToolError codes and hides unknown errors', () => {
    expect(toToolError(new GatewayError('not_offered', 'no such tool'))).toEqual({
      code: 'unknown_tool',
      message: 'no such tool',
    });
    expect(toToolError(new GatewayError('needs_approval', 'write tool not listed')).code).toBe('not_allowed');
    expect(toToolError(new GatewayError('timeout', 't')).code).toBe('timeout');
    expect(toToolError(new GatewayError('limit', 'l')).code).toBe('limit');
    expect(toToolError(new Error('secret /etc/toolgate/token'))).toEqual({
      code: 'unavailable',
      message: 'internal error in the gateway (see the gateway log)',
    });
  });
});

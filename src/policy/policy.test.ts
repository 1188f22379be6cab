import { describe, expect, it } from 'vitest';
import type { ToolClass } from '../config/config-schema.js';
import { checkScriptToolList, decideDirectCall, decideScriptCall, isOffered, type PolicyTool } from './policy.js';

const tool = (cls: ToolClass, flags: Partial<PolicyTool> = {}): PolicyTool => ({
  name: `svc__${cls}`,
  class: cls,
  longTask: false,
  disabled: false,
  ...flags,
});
const approve = { mode: 'approve', readOnly: false } as const;
const auto = { mode: 'auto', readOnly: false } as const;
const readOnlyApprove = { mode: 'approve', readOnly: true } as const;
const readOnlyAuto = { mode: 'auto', readOnly: true } as const;
const fresh = { allowedForSession: false };

describe('direct calls: the table of PRODUCT.md §2', () => {
  it.each([
    ['read', approve, { kind: 'run', background: false }],
    ['read', auto, { kind: 'run', background: false }],
    ['read', readOnlyApprove, { kind: 'run', background: false }],
    ['read', readOnlyAuto, { kind: 'run', background: false }],
    ['write', approve, { kind: 'ask', options: ['allow_once', 'allow_session', 'deny'], background: false }],
    ['write', auto, { kind: 'run', background: false }],
    ['destructive', approve, { kind: 'ask', options: ['allow_once', 'deny'], background: false }],
    ['destructive', auto, { kind: 'ask', options: ['allow_once', 'deny'], background: false }],
  ] as const)('%s in %o', (cls, profile, expected) => {
    expect(decideDirectCall(tool(cls), profile, fresh)).toEqual(expected);
  });

  it.each([
    ['write', readOnlyApprove],
    ['write', readOnlyAuto],
    ['destructive', readOnlyApprove],
    ['destructive', readOnlyAuto],
  ] as const)('%s in read-only mode %o is not offered', (cls, profile) => {
    expect(isOffered(tool(cls), profile)).toBe(false);
    const decision = decideDirectCall(tool(cls), profile, fresh);
    expect(decision).toMatchObject({ kind: 'refuse', code: 'not_offered' });
    expect(decision.kind === 'refuse' && decision.reason).toContain('read-only mode');
  });

  it('a write tool allowed for this session runs without asking; destructive still asks', () => {
    expect(decideDirectCall(tool('write'), approve, { allowedForSession: true })).toEqual({
      kind: 'run',
      background: false,
    });
    expect(decideDirectCall(tool('destructive'), approve, { allowedForSession: true })).toMatchObject({ kind: 'ask' });
  });

  it.each([approve, auto, readOnlyApprove, readOnlyAuto])('disabled tools are never offered (%o)', (profile) => {
    for (const cls of ['read', 'write', 'destructive'] as const) {
      expect(isOffered(tool(cls, { disabled: true }), profile)).toBe(false);
      expect(decideDirectCall(tool(cls, { disabled: true }), profile, fresh)).toMatchObject({
        kind: 'refuse',
        reason: expect.stringContaining('disabled') as unknown,
      });
    }
  });

  it.each([
    ['read', approve, 'run'],
    ['read', auto, 'run'],
    ['read', readOnlyAuto, 'run'],
    ['write', approve, 'ask'],
    ['write', auto, 'run'],
    ['destructive', approve, 'ask'],
    ['destructive', auto, 'ask'],
  ] as const)('long-task %s tool in %o runs in the background after its class rule (%s)', (cls, profile, kind) => {
    expect(decideDirectCall(tool(cls, { longTask: true }), profile, fresh)).toMatchObject({ kind, background: true });
  });

  it('a long-task write tool in read-only mode follows its class: not offered', () => {
    expect(isOffered(tool('write', { longTask: true }), readOnlyAuto)).toBe(false);
  });
});

describe('calls from a script', () => {
  const none = new Set<string>();
  it('read tools run in every mode', () => {
    for (const profile of [approve, auto, readOnlyApprove]) {
      expect(decideScriptCall(tool('read'), profile, none)).toEqual({ kind: 'run' });
    }
  });
  it('write tools run only when listed, and never in read-only mode', () => {
    const write = tool('write');
    expect(decideScriptCall(write, approve, none)).toMatchObject({ kind: 'refuse', code: 'not_allowed' });
    expect(decideScriptCall(write, approve, new Set([write.name]))).toEqual({ kind: 'run' });
    expect(decideScriptCall(write, auto, new Set([write.name]))).toEqual({ kind: 'run' });
    expect(decideScriptCall(write, readOnlyAuto, new Set([write.name]))).toMatchObject({ kind: 'refuse' });
  });
  it('destructive, long-task and disabled tools never run from a script', () => {
    const cases = [tool('destructive'), tool('read', { longTask: true }), tool('read', { disabled: true })];
    for (const candidate of cases) {
      const decision = decideScriptCall(candidate, auto, new Set([candidate.name]));
      expect(decision.kind).toBe('refuse');
    }
  });
  it('the tools list is checked before the run, naming each bad tool', () => {
    const tools = new Map<string, PolicyTool>([
      ['a__w', { ...tool('write'), name: 'a__w' }],
      ['a__d', { ...tool('destructive'), name: 'a__d' }],
      ['a__l', { ...tool('write', { longTask: true }), name: 'a__l' }],
      ['a__x', { ...tool('write', { disabled: true }), name: 'a__x' }],
    ]);
    const problems = checkScriptToolList(
      ['a__w', 'a__d', 'a__l', 'a__x', 'a__unknown'],
      (name) => tools.get(name),
      approve,
    );
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/a__d.*destructive/);
    expect(problems.join('\n')).toMatch(/a__l.*long task/);
    expect(problems.join('\n')).toMatch(/a__x.*disabled/);
    expect(problems.join('\n')).toMatch(/a__unknown is not a tool/);
  });
});

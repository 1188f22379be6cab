import { describe, expect, test } from 'vitest';
import { buildScriptReply } from './script-reply.js';
import type { ScriptOutcome } from './script-runner.js';

function outcome(overrides: Partial<ScriptOutcome> = {}): ScriptOutcome {
  return {
    status: 'ok',
    exitCode: 0,
    signal: null,
    calls: 3,
    failures: 1,
    callsPerTool: { fleet__get_device_status: 3 },
    durationMs: 12_345,
    outputHead: 'A1 online\nA2 offline\n',
    outputChars: 21,
    outputTruncated: false,
    stderrTail: '',
    detailsDir: '.agent/scripts/abc/',
    ...overrides,
  };
}

describe('buildScriptReply', () => {
  test('first line, then the output; not an error', () => {
    const reply = buildScriptReply(outcome());
    expect(reply.content[0].text).toBe(
      'run_script ok · 3 calls (1 failed) · 12.3 s · details: .agent/scripts/abc/\nA1 online\nA2 offline',
    );
    expect(reply.isError).toBe(false);
    expect(reply.structuredContent).toEqual({
      status: 'ok',
      calls: 3,
      failures: 1,
      callsPerTool: { fleet__get_device_status: 3 },
      durationMs: 12_345,
      exitCode: 0,
      detailsDir: '.agent/scripts/abc/',
      outputFile: '.agent/scripts/abc/output.txt',
      outputChars: 21,
      outputTruncated: false,
    });
  });

  test('a cut output names the full output file', () => {
    const head = 'x'.repeat(20_000);
    const text = buildScriptReply(outcome({ outputHead: head, outputChars: 1_000_000, outputTruncated: true }))
      .content[0].text;
    const lines = text.split('\n');
    expect(lines[1]).toBe(head);
    expect(lines[2]).toBe('[output cut at 20,000 of 1,000,000 characters; full output: .agent/scripts/abc/output.txt]');
  });

  test('a failure appends the end of stderr (the traceback) and is an error', () => {
    const traceback = `${'noise line\n'.repeat(500)}Traceback (most recent call last):\n  File "script.py", line 2\nValueError: boom\n`;
    const reply = buildScriptReply(outcome({ status: 'failed', exitCode: 1, stderrTail: traceback }));
    expect(reply.isError).toBe(true);
    const text = reply.content[0].text;
    expect(text.startsWith('run_script failed · ')).toBe(true);
    expect(text).toContain('--- stderr (end) ---\n');
    expect(text.endsWith('ValueError: boom')).toBe(true);
    const stderrPart = text.slice(text.indexOf('--- stderr (end) ---\n') + 21);
    expect(stderrPart.length).toBeLessThanOrEqual(2000);
    expect(stderrPart.startsWith('noise line')).toBe(true);
  });

  test('stderr of a successful run is not shown; killed runs say why; empty output is said', () => {
    expect(buildScriptReply(outcome({ stderrTail: 'warning' })).content[0].text).not.toContain('warning');
    const reply = buildScriptReply(
      outcome({
        status: 'timed out',
        exitCode: null,
        killedReason: 'timed out after 1800 s',
        outputHead: '',
        outputChars: 0,
      }),
    );
    expect(reply.content[0].text).toBe(
      'run_script timed out · 3 calls (1 failed) · 12.3 s · details: .agent/scripts/abc/\n(ended by the gateway: timed out after 1800 s)\n(the script printed nothing)',
    );
    expect(reply.isError).toBe(true);
    expect(reply.structuredContent.killedReason).toBe('timed out after 1800 s');
    expect(buildScriptReply(outcome({ status: 'cancelled' })).isError).toBe(true);
  });
});

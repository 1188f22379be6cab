import { describe, expect, it } from 'vitest';
import { classifyTool } from './classify-tool.js';
import { buildServiceEntries } from './catalogue.js';

describe('classification table', () => {
  it.each([
    [undefined, 'destructive', 'no annotations (MCP default: destructive)'],
    [{}, 'destructive', 'no destructiveHint (MCP default: destructive)'],
    [{ readOnlyHint: true }, 'read', 'annotation readOnlyHint: true'],
    [{ readOnlyHint: true, destructiveHint: true }, 'read', 'annotation readOnlyHint: true'],
    [{ readOnlyHint: false, destructiveHint: false }, 'write', 'annotation destructiveHint: false'],
    [{ destructiveHint: false }, 'write', 'annotation destructiveHint: false'],
    [{ readOnlyHint: false, destructiveHint: true }, 'destructive', 'annotation destructiveHint: true'],
    [{ readOnlyHint: false }, 'destructive', 'no destructiveHint (MCP default: destructive)'],
  ] as const)('annotations %o → %s', (annotations, cls, reason) => {
    const result = classifyTool('svc__t', annotations, {});
    expect(result).toEqual({ class: cls, longTask: false, disabled: false, reasons: [reason] });
  });

  it('overrides: globs in order, then the exact name wins, each named in the reasons', () => {
    const result = classifyTool(
      'fleet__reboot_device',
      { destructiveHint: true },
      {
        'fleet__*': { class: 'write', longTask: true },
        'other__*': { disabled: true },
        'fleet__reboot_*': { class: 'read' },
        fleet__reboot_device: { class: 'destructive', longTask: false },
      },
    );
    expect(result.class).toBe('destructive');
    expect(result.longTask).toBe(false);
    expect(result.disabled).toBe(false);
    expect(result.reasons).toEqual([
      'annotation destructiveHint: true',
      'override tools["fleet__*"]: class write, longTask true',
      'override tools["fleet__reboot_*"]: class read',
      'override tools["fleet__reboot_device"]: class destructive, longTask false',
    ]);
  });

  it('a service entry reports invalid and duplicate names instead of dropping them', () => {
    const schema = { type: 'object' as const };
    const { entries, problems } = buildServiceEntries(
      'svc',
      [
        { name: 'ok', inputSchema: schema },
        { name: 'has space', inputSchema: schema },
        { name: 'x'.repeat(130), inputSchema: schema },
        { name: 'ok', inputSchema: schema },
      ],
      {},
    );
    expect(entries.map((entry) => entry.name)).toEqual(['svc__ok']);
    expect(problems.map((problem) => problem.tool.slice(0, 9))).toEqual(['has space', 'xxxxxxxxx', 'ok']);
  });

  it('the definition hash follows the definition', () => {
    const base = { name: 't', inputSchema: { type: 'object' as const } };
    const [a] = buildServiceEntries('s', [base], {}).entries;
    const [b] = buildServiceEntries('s', [{ ...base, description: 'changed' }], {}).entries;
    expect(a?.definitionHash).not.toBe(b?.definitionHash);
  });
});

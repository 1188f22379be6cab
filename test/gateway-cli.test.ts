import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFleet } from '../src/demo/fleet-data.js';
import type { CallRecord } from '../src/store/store-records.js';
import type { ToolsReport } from '../src/cli/tools-command.js';
import {
  baseConfig,
  connectClient,
  fleetService,
  startTestGateway,
  tokens,
  type TestGateway,
  runCli,
} from './harness.js';

// The catalogue table and the audit through the built CLI, as a user runs them.

describe('toolgate tools', () => {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-cli-'));
  const configPath = join(dir, 'toolgate.json');
  writeFileSync(
    configPath,
    JSON.stringify(
      baseConfig({
        mcpServers: { fleet: fleetService(), fleet2: fleetService() },
        tools: {
          'fleet*__export_*': { longTask: true },
          fleet__reboot_device: { disabled: true },
          'fleet2__*': { class: 'destructive' },
          fleet2__list_devices: { class: 'read' },
        },
        profiles: {
          ops: { services: ['fleet'], mode: 'approve', tokens: [tokens.ops] },
          both: { services: ['fleet', 'fleet2'], mode: 'auto', tokens: [tokens.auto] },
          readonly: { services: ['fleet'], mode: 'auto', readOnly: true, tokens: [tokens.readonly] },
        },
      }),
    ),
  );
  const tools = async (...extra: string[]): Promise<ToolsReport> => {
    const run = await runCli(['tools', '--json', '--config', configPath, '--data-dir', join(dir, 'data'), ...extra]);
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout) as ToolsReport;
  };
  const byName = (report: ToolsReport) => new Map(report.tools.map((tool) => [tool.name, tool]));

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('classifies every tool by annotation, then glob and exact overrides, with the reasons', async () => {
    const report = await tools();
    expect(report.services).toEqual({ fleet: { state: 'up' }, fleet2: { state: 'up' } });
    expect(report.problems).toEqual([]);
    const table = byName(report);
    expect(table.size).toBe(10);
    const readOnly = 'annotation readOnlyHint: true';
    expect(table.get('fleet__list_devices')).toEqual({
      name: 'fleet__list_devices',
      class: 'read',
      longTask: false,
      disabled: false,
      offered: true,
      reasons: [readOnly],
    });
    expect(table.get('fleet__get_device_status')).toMatchObject({ class: 'read', reasons: [readOnly] });
    expect(table.get('fleet__set_device_label')).toMatchObject({
      class: 'write',
      offered: true,
      reasons: ['annotation destructiveHint: false'],
    });
    expect(table.get('fleet__reboot_device')).toEqual({
      name: 'fleet__reboot_device',
      class: 'destructive',
      longTask: false,
      disabled: true,
      offered: false,
      reasons: ['annotation destructiveHint: true', 'override tools["fleet__reboot_device"]: disabled true'],
    });
    for (const service of ['fleet', 'fleet2']) {
      expect(table.get(`${service}__export_fleet_report`)).toMatchObject({
        longTask: true,
        reasons: expect.arrayContaining(['override tools["fleet*__export_*"]: longTask true']) as unknown,
      });
    }
    expect(table.get('fleet2__get_device_status')).toMatchObject({
      class: 'destructive',
      reasons: [readOnly, 'override tools["fleet2__*"]: class destructive'],
    });
    // The exact name has the last word over the glob.
    expect(table.get('fleet2__list_devices')).toMatchObject({
      class: 'read',
      reasons: [
        readOnly,
        'override tools["fleet2__*"]: class destructive',
        'override tools["fleet2__list_devices"]: class read',
      ],
    });
  });

  it('filters by profile, and marks what a read-only profile is not offered', async () => {
    const ops = await tools('--profile', 'ops');
    expect(ops.tools.map((tool) => tool.name).sort()).toEqual([
      'fleet__export_fleet_report',
      'fleet__get_device_status',
      'fleet__list_devices',
      'fleet__reboot_device',
      'fleet__set_device_label',
    ]);
    expect(Object.keys(ops.services)).toEqual(['fleet']);
    const readonly = byName(await tools('--profile', 'readonly'));
    expect(readonly.get('fleet__set_device_label')?.offered).toBe(false);
    expect(readonly.get('fleet__reboot_device')?.offered).toBe(false);
    expect(readonly.get('fleet__get_device_status')?.offered).toBe(true);
    expect(readonly.get('fleet__export_fleet_report')?.offered).toBe(true);
  });

  it('prints the same table as text', async () => {
    const run = await runCli(['tools', '--config', configPath, '--data-dir', join(dir, 'data'), '--profile', 'ops']);
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^TOOL\s+CLASS\s+FLAGS\s+REASON$/);
    expect(lines).toHaveLength(6);
    expect(run.stdout).toMatch(
      /fleet__reboot_device\s+destructive\s+disabled,not-offered\s+annotation destructiveHint: true; override tools\["fleet__reboot_device"\]: disabled true/,
    );
    expect(run.stdout).toMatch(
      /fleet__export_fleet_report\s+read\s+longTask\s+annotation readOnlyHint: true; override/,
    );
  });
});

describe('toolgate audit', () => {
  let gateway: TestGateway;
  const device = generateFleet().find((candidate) => !candidate.unanswering);
  if (device === undefined) throw new Error('fixture device missing');
  const audit = async (...extra: string[]): Promise<CallRecord[]> => {
    const configPath = join(dirname(gateway.dataDir), 'toolgate.json');
    const run = await runCli(['audit', '--json', '--config', configPath, '--data-dir', gateway.dataDir, ...extra]);
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout) as CallRecord[];
  };

  beforeAll(async () => {
    // Nobody answers the write's approval here, so let it expire quickly (as deny).
    gateway = await startTestGateway(baseConfig({ settings: { approvals: { timeoutSec: 0.3 } } }));
    const ops = await connectClient(gateway.mcpUrl, tokens.ops, 'legacy', { session: 'audit-ops' });
    await ops.callTool({ name: 'fleet__get_device_status', arguments: { sn: device.sn } });
    await ops.callTool({ name: 'fleet__set_device_label', arguments: { sn: device.sn, label: 'x' } });
    await ops.callTool({ name: 'fleet__no_such_tool', arguments: {} });
    await ops.close();
    const auto = await connectClient(gateway.mcpUrl, tokens.auto, 'modern', { session: 'audit-auto' });
    await auto.callTool({ name: 'fleet__list_devices', arguments: { pageSize: 3 } });
    await auto.close();
  });

  afterAll(async () => {
    await gateway?.close();
  });

  it('lists the records newest first with tool, status, duration and session', async () => {
    const rows = await audit();
    expect(rows.map((row) => [row.tool, row.status, row.profile, row.sessionId])).toEqual([
      ['fleet__list_devices', 'ok', 'auto', 'auto/audit-auto'],
      ['fleet__no_such_tool', 'error', 'ops', 'ops/audit-ops'],
      ['fleet__set_device_label', 'expired', 'ops', 'ops/audit-ops'],
      ['fleet__get_device_status', 'ok', 'ops', 'ops/audit-ops'],
    ]);
    for (const row of rows) {
      expect(typeof row.durationMs).toBe('number');
      expect(row.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(rows[3]?.arguments).toEqual({ sn: device.sn });
    expect(rows[2]?.error).toMatch(/^approval for fleet__set_device_label expired after \d+ s with no decision$/);
    expect(rows[1]?.error).toBe('unknown tool fleet__no_such_tool');
  });

  it('filters by tool and by session', async () => {
    expect((await audit('--tool', 'fleet__list_devices')).map((row) => row.tool)).toEqual(['fleet__list_devices']);
    const session = await audit('--session', 'ops/audit-ops', '--limit', '2');
    expect(session.map((row) => row.tool)).toEqual(['fleet__no_such_tool', 'fleet__set_device_label']);
  });
});

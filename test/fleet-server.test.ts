import { existsSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/client';
import type { ClientOptions } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { generateFleet } from '../src/demo/fleet-data.js';

// The suite runs the compiled server, as a gateway would; `npm run build` produces it.
const SERVER_ENTRY = 'dist/src/demo/fleet-server.js';

const fleet = generateFleet();
const unanswering = fleet.find((device) => device.unanswering);
const healthy = fleet.find((device) => !device.unanswering && device.status === 'online');
if (unanswering === undefined || healthy === undefined) throw new Error('fixture devices missing');

type Connection = { client: Client; transport: StdioClientTransport; received: Record<string, unknown>[] };

const eras: { era: string; options: ClientOptions }[] = [
  { era: '2025-11-25', options: {} },
  { era: '2026-07-28', options: { versionNegotiation: { mode: 'auto' } } },
];

const connections: Connection[] = [];

function textOf(result: { content: unknown[] }): string {
  const first = result.content[0] as { type?: string; text?: string } | undefined;
  return first?.type === 'text' ? (first.text ?? '') : '';
}

async function connect(options: ClientOptions, env: Record<string, string> = {}): Promise<Connection> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVER_ENTRY],
    env: { ...getDefaultEnvironment(), FLEET_REPORT_SECONDS: '2', ...env },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'fleet-e2e', version: '1.0.0' }, options);
  await client.connect(transport);
  // Record every inbound message so the test can see what the server sends after a cancel.
  const received: Record<string, unknown>[] = [];
  const forward = transport.onmessage;
  transport.onmessage = (message) => {
    received.push({ ...message, receivedAt: performance.now() });
    forward?.(message);
  };
  const connection = { client, transport, received };
  connections.push(connection);
  return connection;
}

beforeAll(() => {
  if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run npm run build first`);
});

afterEach(async () => {
  await Promise.all(connections.splice(0).map(({ client }) => client.close()));
});

describe.each(eras)('fleet over stdio, $era era', ({ era, options }) => {
  it('negotiates the era and lists five annotated tools with output schemas', async () => {
    const { client } = await connect(options);
    expect(client.getNegotiatedProtocolVersion()).toBe(era);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect([...byName.keys()].sort()).toEqual([
      'export_fleet_report',
      'get_device_status',
      'list_devices',
      'reboot_device',
      'set_device_label',
    ]);
    for (const tool of tools) expect(tool.outputSchema?.type).toBe('object');
    expect(byName.get('list_devices')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get('get_device_status')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get('export_fleet_report')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get('set_device_label')?.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
    });
    expect(byName.get('reboot_device')?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
  });

  it('pages through all 500 devices', async () => {
    const { client } = await connect(options);
    const serialNumbers: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const result = await client.callTool({ name: 'list_devices', arguments: cursor === undefined ? {} : { cursor } });
      expect(result.isError).toBeFalsy();
      const page = result.structuredContent as { devices: { sn: string }[]; nextCursor?: string; total: number };
      expect(JSON.parse(textOf(result))).toEqual(page);
      expect(page.total).toBe(500);
      serialNumbers.push(...page.devices.map((device) => device.sn));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(5);
    expect(new Set(serialNumbers).size).toBe(500);
  });

  it('answers status, fails an unanswering device, and keeps a write', async () => {
    const { client } = await connect(options);
    const failed = await client.callTool({ name: 'get_device_status', arguments: { sn: unanswering.sn } });
    expect(failed.isError).toBe(true);
    expect(textOf(failed)).toContain(`device ${unanswering.sn} did not answer`);

    const labelled = await client.callTool({ name: 'set_device_label', arguments: { sn: healthy.sn, label: 'e2e' } });
    expect(labelled.structuredContent).toEqual({ sn: healthy.sn, label: 'e2e', previous: null });
    const rebooted = await client.callTool({ name: 'reboot_device', arguments: { sn: healthy.sn } });
    expect(rebooted.structuredContent).toMatchObject({ sn: healthy.sn, rebooted: true });
    const status = await client.callTool({ name: 'get_device_status', arguments: { sn: healthy.sn } });
    expect(status.structuredContent).toMatchObject({ sn: healthy.sn, status: 'online', label: 'e2e', rebooting: true });
  });

  it('answers every device when FLEET_NO_ERRORS=1', async () => {
    const { client } = await connect(options, { FLEET_NO_ERRORS: '1', FLEET_FIXED_LATENCY_MS: '1' });
    const result = await client.callTool({ name: 'get_device_status', arguments: { sn: unanswering.sn } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ sn: unanswering.sn });
  });

  it('reports progress during export_fleet_report and returns the summary', async () => {
    const { client } = await connect(options);
    const progress: { progress: number; total?: number | undefined; message?: string | undefined }[] = [];
    const result = await client.callTool(
      { name: 'export_fleet_report', arguments: {} },
      { onprogress: (update) => progress.push(update) },
    );
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ total: 500 });
    expect(progress.length).toBeGreaterThanOrEqual(10);
    expect(progress.at(-1)).toMatchObject({ progress: 500, total: 500 });
    expect(progress[0]?.message).toMatch(/^scanned \d+\/500 devices/);
    for (let index = 1; index < progress.length; index++) {
      expect(progress[index]?.progress).toBeGreaterThan(progress[index - 1]?.progress ?? 0);
    }
  });

  it('stops export_fleet_report promptly when cancelled', async () => {
    const { client, received } = await connect(options);
    const controller = new AbortController();
    let updates = 0;
    const call = client.callTool(
      { name: 'export_fleet_report', arguments: {} },
      {
        signal: controller.signal,
        onprogress: () => {
          updates++;
          if (updates === 3) controller.abort('user cancelled');
        },
      },
    );
    await expect(call).rejects.toThrow();
    const abortedAt = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const late = received.filter((message) => (message.receivedAt as number) > abortedAt + 150);
    expect(late).toEqual([]);
    const after = await client.callTool({ name: 'list_devices', arguments: { pageSize: 1 } });
    expect(after.isError).toBeFalsy();
  });

  it('sees the service crash mid-call through the FLEET_CRASH_ON_SN test hook', async () => {
    const { client } = await connect(options, { FLEET_CRASH_ON_SN: healthy.sn });
    let closed = false;
    client.onclose = () => {
      closed = true;
    };
    const before = await client.callTool({ name: 'list_devices', arguments: { pageSize: 1 } });
    expect(before.isError).toBeFalsy();
    const started = performance.now();
    await expect(client.callTool({ name: 'get_device_status', arguments: { sn: healthy.sn } })).rejects.toThrow();
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    await expect.poll(() => closed).toBe(true);
  });
});

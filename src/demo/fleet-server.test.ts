import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { generateFleet } from './fleet-data.js';
import { createFleetServer, createFleetState } from './fleet-server.js';
import type { FleetServerDependencies } from './fleet-server.js';

const fleet = generateFleet();
const unanswering = fleet.find((device) => device.unanswering);
const healthy = fleet.find((device) => !device.unanswering && device.status === 'online');
if (unanswering === undefined || healthy === undefined) throw new Error('fixture devices missing');

const clients: Client[] = [];

async function connect(dependencies: FleetServerDependencies): Promise<Client> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await createFleetServer(dependencies).connect(serverTransport);
  const client = new Client({ name: 'fleet-in-memory-test', version: '1.0.0' });
  await client.connect(clientTransport);
  clients.push(client);
  return client;
}

function textOf(result: { content: unknown[] }): string {
  const first = result.content[0] as { type?: string; text?: string } | undefined;
  return first?.type === 'text' ? (first.text ?? '') : '';
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

describe('createFleetServer in memory', () => {
  it('answers status with the device data and its text is the JSON of it', async () => {
    const client = await connect({ options: { fixedLatencyMs: 0 } });
    const result = await client.callTool({ name: 'get_device_status', arguments: { sn: healthy.sn } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ sn: healthy.sn, status: 'online', label: null, rebooting: false });
    expect(JSON.parse(textOf(result))).toEqual(result.structuredContent);
  });

  it('fails an unanswering device unless errors are disabled, and fails an unknown sn', async () => {
    const realistic = await connect({ options: { fixedLatencyMs: 0 } });
    const failed = await realistic.callTool({ name: 'get_device_status', arguments: { sn: unanswering.sn } });
    expect(failed.isError).toBe(true);
    expect(textOf(failed)).toBe(`device ${unanswering.sn} did not answer: timeout talking to controller`);
    const unknown = await realistic.callTool({ name: 'get_device_status', arguments: { sn: 'FL-999999' } });
    expect(unknown.isError).toBe(true);

    const benchmark = await connect({ options: { fixedLatencyMs: 0, noErrors: true } });
    const answered = await benchmark.callTool({ name: 'get_device_status', arguments: { sn: unanswering.sn } });
    expect(answered.isError).toBeFalsy();
  });

  it('uses the fixed latency instead of the per-device one', async () => {
    const client = await connect({ options: { fixedLatencyMs: 120 } });
    const started = performance.now();
    await client.callTool({ name: 'get_device_status', arguments: { sn: healthy.sn } });
    expect(performance.now() - started).toBeGreaterThanOrEqual(110);
  });

  it('keeps labels and reboots in the shared state across server instances', async () => {
    const state = createFleetState();
    const now = (): Date => new Date('2026-02-01T00:00:00.000Z');
    const first = await connect({ state, now, options: { fixedLatencyMs: 0 } });
    const labelled = await first.callTool({ name: 'set_device_label', arguments: { sn: healthy.sn, label: 'rack 4' } });
    expect(labelled.structuredContent).toEqual({ sn: healthy.sn, label: 'rack 4', previous: null });
    const rebooted = await first.callTool({ name: 'reboot_device', arguments: { sn: healthy.sn } });
    expect(rebooted.structuredContent).toEqual({ sn: healthy.sn, rebooted: true, at: '2026-02-01T00:00:00.000Z' });

    const second = await connect({ state, options: { fixedLatencyMs: 0 } });
    const relabelled = await second.callTool({
      name: 'set_device_label',
      arguments: { sn: healthy.sn, label: 'rack 5' },
    });
    expect(relabelled.structuredContent).toMatchObject({ previous: 'rack 4' });
    const status = await second.callTool({ name: 'get_device_status', arguments: { sn: healthy.sn } });
    expect(status.structuredContent).toMatchObject({ label: 'rack 5', rebooting: true });
  });

  it('calls the injected exit about 200 ms into a call for the crash sn', async () => {
    const exits: { code: number; at: number }[] = [];
    const started = performance.now();
    const client = await connect({
      options: { fixedLatencyMs: 0, crashOnSn: healthy.sn },
      exit: (code) => exits.push({ code, at: performance.now() - started }),
    });
    await client.callTool({ name: 'get_device_status', arguments: { sn: healthy.sn } });
    expect(exits).toHaveLength(1);
    expect(exits[0]?.code).toBe(1);
    expect(exits[0]?.at).toBeGreaterThanOrEqual(190);
  });
});

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFleet } from '../src/demo/fleet-data.js';
import {
  baseConfig,
  connectClient,
  fleetService,
  startTestGateway,
  textOf,
  tokens,
  type TestGateway,
} from './harness.js';

// Upstream services of both transports and eras, and a service that crashes mid-call and comes back.

const everythingEntry = 'node_modules/@modelcontextprotocol/server-everything/dist/index.js';
const devices = generateFleet().filter((device) => !device.unanswering && device.status === 'online');
const crashDevice = devices[7];
const healthyDevice = devices[8];
if (crashDevice === undefined || healthyDevice === undefined) throw new Error('fixture devices missing');

interface Health {
  status: string;
  services: Record<string, { state: string; protocolVersion?: string; error?: string }>;
}

let gateway: TestGateway;
let everythingHttp: ChildProcess | undefined;
const clients: Client[] = [];

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** server-everything in Streamable HTTP mode as a child process; resolves once it listens. */
async function startEverythingHttp(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [everythingEntry, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything did not listen: ${stderr}`)), 15_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      if (stderr.includes(`listening on port ${port}`)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited with ${code}: ${stderr}`)));
  });
  return child;
}

async function health(): Promise<Health> {
  const response = await fetch(`${gateway.url}/health`);
  return (await response.json()) as Health;
}

async function waitForHealth(done: (value: Health) => boolean, timeoutMs = 10_000): Promise<Health> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await health();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`health never matched: ${JSON.stringify(value)}`);
    await sleep(25);
  }
}

beforeAll(async () => {
  const port = await freePort();
  everythingHttp = await startEverythingHttp(port);
  gateway = await startTestGateway(
    baseConfig({
      mcpServers: {
        fleet: fleetService({ FLEET_CRASH_ON_SN: crashDevice.sn }),
        everything: { command: process.execPath, args: [everythingEntry, 'stdio'] },
        'everything-http': { url: `http://127.0.0.1:${port}/mcp` },
      },
      profiles: {
        auto: { services: ['fleet', 'everything', 'everything-http'], mode: 'auto', tokens: [tokens.auto] },
      },
    }),
  );
});

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await gateway?.close();
  everythingHttp?.kill('SIGKILL');
});

describe('a real third-party server over stdio and over Streamable HTTP', () => {
  it('reports every service up with its negotiated era on /health', async () => {
    const { status, services } = await health();
    expect(status).toBe('ok');
    // fleet is built on SDK v2 and speaks the 2026 era; server-everything is on SDK v1 and speaks 2025-11-25.
    expect(services).toEqual({
      fleet: expect.objectContaining({ state: 'up', protocolVersion: '2026-07-28' }) as unknown,
      everything: expect.objectContaining({ state: 'up', protocolVersion: '2025-11-25' }) as unknown,
      'everything-http': expect.objectContaining({ state: 'up', protocolVersion: '2025-11-25' }) as unknown,
    });
  });

  it.each(['everything', 'everything-http'])('lists and calls the tools of %s through the gateway', async (service) => {
    const client = await connectClient(gateway.mcpUrl, tokens.auto, 'modern');
    clients.push(client);
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining([`${service}__echo`, `${service}__get-sum`]));
    const echoed = await client.callTool({ name: `${service}__echo`, arguments: { message: `via ${service}` } });
    expect(textOf(echoed)).toBe(`Echo: via ${service}`);
    const sum = await client.callTool({ name: `${service}__get-sum`, arguments: { a: 19, b: 23 } });
    expect(textOf(sum)).toContain('42');

    const steps: number[] = [];
    const long = await client.callTool(
      { name: `${service}__trigger-long-running-operation`, arguments: { duration: 0.3, steps: 3 } },
      { onprogress: (progress) => steps.push(progress.progress) },
    );
    expect(textOf(long)).toContain('Long running operation completed');
    expect(steps.length).toBeGreaterThanOrEqual(2);
    expect(steps[0]).toBe(1);
  });
});

describe('a service that crashes mid-call and comes back', () => {
  it('fails the call naming the service, keeps the others serving, and drops then restores its tools', async () => {
    const seenLists: string[][] = [];
    const watchers: Client[] = [];
    for (const era of ['legacy', 'modern'] as const) {
      const watcher = new Client(
        { name: `watcher-${era}`, version: '1' },
        {
          versionNegotiation: { mode: era === 'modern' ? 'auto' : 'legacy' },
          listChanged: {
            tools: {
              onChanged: (error, tools) => {
                if (error === null && tools !== null) seenLists.push(tools.map((tool) => `${era}:${tool.name}`));
              },
            },
          },
        },
      );
      await watcher.connect(
        new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), {
          requestInit: { headers: { Authorization: `Bearer ${tokens.auto}` } },
        }),
      );
      watchers.push(watcher);
      clients.push(watcher);
    }
    const [legacy, modern] = watchers as [Client, Client];
    expect((await modern.listTools()).tools.map((tool) => tool.name)).toContain('fleet__get_device_status');

    const crashed = await legacy.callTool({ name: 'fleet__get_device_status', arguments: { sn: crashDevice.sn } });
    expect(crashed.isError).toBe(true);
    expect(textOf(crashed)).toBe('service fleet went down during the call to get_device_status');

    const down = await waitForHealth((value) => value.services.fleet?.state === 'down');
    expect(down.status).toBe('degraded');
    expect(down.services.everything?.state).toBe('up');
    const whileDown = (await modern.listTools(undefined, { cacheMode: 'bypass' })).tools.map((tool) => tool.name);
    expect(whileDown.filter((name) => name.startsWith('fleet__'))).toEqual([]);
    expect(whileDown).toContain('everything__echo');
    const echoed = await legacy.callTool({ name: 'everything__echo', arguments: { message: 'still here' } });
    expect(textOf(echoed)).toBe('Echo: still here');
    const refused = await modern.callTool({ name: 'fleet__list_devices', arguments: {} });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^service fleet is down/);

    const up = await waitForHealth((value) => value.services.fleet?.state === 'up');
    expect(up.status).toBe('ok');
    const back = await modern.callTool({ name: 'fleet__get_device_status', arguments: { sn: healthyDevice.sn } });
    expect(back.structuredContent).toMatchObject({ sn: healthyDevice.sn });
    expect((await legacy.listTools(undefined, { cacheMode: 'bypass' })).tools.map((tool) => tool.name)).toContain(
      'fleet__list_devices',
    );

    // Each client is told the list changed: once without fleet's tools, then (debounced) with them again.
    const sawDropAndReturn = (era: string): boolean => {
      const lists = seenLists.filter((list) => list.some((name) => name.startsWith(`${era}:`)));
      const withoutFleet = lists.findIndex((list) => !list.includes(`${era}:fleet__list_devices`));
      return (
        withoutFleet >= 0 && lists.slice(withoutFleet + 1).some((list) => list.includes(`${era}:fleet__list_devices`))
      );
    };
    const deadline = Date.now() + 5_000;
    while (!(sawDropAndReturn('legacy') && sawDropAndReturn('modern')) && Date.now() < deadline) await sleep(50);
    expect(sawDropAndReturn('legacy'), 'legacy client saw fleet leave and come back').toBe(true);
    expect(sawDropAndReturn('modern'), 'modern client saw fleet leave and come back').toBe(true);

    const records = (await gateway.gateway.store.queryCalls({ tool: 'fleet__get_device_status' })).rows;
    const crashRecord = records.find((row) => row.arguments.sn === crashDevice.sn);
    expect(crashRecord).toMatchObject({ status: 'error', error: expect.stringContaining('service fleet') as unknown });
  });
});

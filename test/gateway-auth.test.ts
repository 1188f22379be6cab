import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
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

// Auth and isolation through the real HTTP path: who gets in, and what each profile can see and call.

const everything = {
  command: process.execPath,
  args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'],
};
const config = baseConfig({
  mcpServers: { fleet: fleetService(), everything },
  profiles: {
    ops: { services: ['fleet'], mode: 'approve', tokens: [tokens.ops] },
    auto: { services: ['fleet', 'everything'], mode: 'auto', tokens: [tokens.auto] },
    readonly: { services: ['fleet'], mode: 'auto', readOnly: true, tokens: [tokens.readonly] },
  },
});
const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const device = generateFleet().find((candidate) => !candidate.unanswering);
if (device === undefined) throw new Error('fixture device missing');

let gateway: TestGateway;
const clients: Client[] = [];

async function connect(token: string, era: 'legacy' | 'modern'): Promise<Client> {
  const client = await connectClient(gateway.mcpUrl, token, era);
  clients.push(client);
  return client;
}

beforeAll(async () => {
  gateway = await startTestGateway(config);
});

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await gateway?.close();
});

describe('authentication', () => {
  const cases: Array<{ label: string; headers: Record<string, string> }> = [
    { label: 'no Authorization header', headers: {} },
    { label: 'a wrong token', headers: { Authorization: 'Bearer wrong-token-0123456789abcdef' } },
    { label: 'a token of another scheme', headers: { Authorization: `Basic ${btoa(`ops:${tokens.ops}`)}` } },
    { label: 'an empty bearer', headers: { Authorization: 'Bearer ' } },
    { label: 'a malformed header', headers: { Authorization: `Bearer ${tokens.ops} extra` } },
    { label: 'the token with a prefix', headers: { Authorization: `Bearer x${tokens.ops}` } },
    { label: 'the admin token (not a profile token)', headers: { Authorization: `Bearer ${tokens.admin}` } },
  ];

  it.each(cases)('answers 401 "Unauthorized" and nothing else to $label', async ({ headers }) => {
    for (const method of ['POST', 'GET', 'DELETE']) {
      const response = await fetch(gateway.mcpUrl, {
        method,
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
        ...(method === 'POST' ? { body: JSON.stringify(initialize) } : {}),
      });
      expect(response.status).toBe(401);
      expect(await response.text()).toBe('Unauthorized');
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(response.headers.get('mcp-session-id')).toBeNull();
    }
  });

  it('lets an SDK client with a wrong token fail to connect in both eras', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      await expect(connectClient(gateway.mcpUrl, 'wrong-token-0123456789abcdef', era)).rejects.toThrow();
    }
  });

  it("refuses one profile's token on another profile's legacy session", async () => {
    const transport = new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), {
      requestInit: { headers: { Authorization: `Bearer ${tokens.ops}` } },
    });
    const client = new Client({ name: 'owner', version: '1' }, { versionNegotiation: { mode: 'legacy' } });
    await client.connect(transport);
    clients.push(client);
    const sessionId = transport.sessionId;
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const hijack = await fetch(gateway.mcpUrl, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${tokens.auto}`,
        'Mcp-Session-Id': sessionId ?? '',
        'Mcp-Protocol-Version': '2025-11-25',
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
    });
    expect(hijack.status).toBe(404);
    expect(await hijack.text()).not.toContain('fleet__');
  });
});

describe.each(['legacy', 'modern'] as const)('profile isolation, %s era', (era) => {
  it('offers a service only to the profile that has it', async () => {
    const ops = await connect(tokens.ops, era);
    const auto = await connect(tokens.auto, era);
    const opsNames = (await ops.listTools()).tools.map((tool) => tool.name);
    const autoNames = (await auto.listTools()).tools.map((tool) => tool.name);
    expect(opsNames.filter((name) => name.startsWith('everything__'))).toEqual([]);
    expect(opsNames).toContain('fleet__list_devices');
    expect(autoNames).toContain('everything__echo');
    expect(autoNames).toContain('fleet__list_devices');

    const refused = await ops.callTool({ name: 'everything__echo', arguments: { message: 'hello' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe('unknown tool everything__echo');
    const echoed = await auto.callTool({ name: 'everything__echo', arguments: { message: `hello ${era}` } });
    expect(echoed.isError).toBeFalsy();
    expect(textOf(echoed)).toBe(`Echo: hello ${era}`);
  });

  it('hides write and destructive tools in read-only mode and refuses them by name', async () => {
    const readonly = await connect(tokens.readonly, era);
    const names = (await readonly.listTools()).tools.map((tool) => tool.name).sort();
    expect(names.filter((name) => name.includes('__'))).toEqual([
      'fleet__export_fleet_report',
      'fleet__get_device_status',
      'fleet__list_devices',
    ]);
    expect(names).toContain('read_workspace_file');
    for (const [name, args] of [
      ['fleet__set_device_label', { sn: device.sn, label: 'read-only must not write' }],
      ['fleet__reboot_device', { sn: device.sn }],
    ] as const) {
      const refused = await readonly.callTool({ name, arguments: args });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain(name);
      expect(textOf(refused)).toContain('read-only mode');
    }
    const status = await readonly.callTool({ name: 'fleet__get_device_status', arguments: { sn: device.sn } });
    expect(status.structuredContent).toMatchObject({ sn: device.sn, label: null, rebooting: false });
  });
});

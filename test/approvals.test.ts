import type { Client } from '@modelcontextprotocol/client';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseConfig, connectClient, startTestGateway, textOf, tokens, type Era, type TestGateway } from './harness.js';

const run = promisify(execFile);
let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway(baseConfig({ settings: { approvals: { timeoutSec: 3 } } }));
});
afterAll(async () => {
  await gateway.close();
});

async function elicitingClient(
  era: Era,
  answer: (message: string) => Record<string, unknown>,
  session: string,
): Promise<Client> {
  const client = await connectClient(gateway.mcpUrl, tokens.ops, era, {
    session,
    capabilities: { elicitation: { form: {} } },
  });
  client.setRequestHandler('elicitation/create', (request) => {
    const params = request.params as { message: string };
    return Promise.resolve(answer(params.message) as never);
  });
  return client;
}

async function pendingFor(session: string): Promise<{ id: string; options: string[] }> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const response = await fetch(`${gateway.url}/api/approvals?status=pending&session=${encodeURIComponent(session)}`, {
      headers: { Authorization: `Bearer ${tokens.admin}` },
    });
    const body = (await response.json()) as { approvals: Array<{ id: string; options: string[] }> };
    if (body.approvals[0] !== undefined) return body.approvals[0];
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no pending approval for ${session}`);
}

function decide(id: string, decision: string, token = tokens.admin): Promise<Response> {
  return fetch(`${gateway.url}/api/approvals/${id}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ decision }),
  });
}

async function lastRecord(session: string) {
  const page = await gateway.gateway.store.queryCalls({ sessionId: `ops/${session}`, limit: 1 });
  return page.rows[0];
}

describe.each(['legacy', 'modern'] as const)('elicitation answered by the client (%s era)', (era) => {
  it('allow once runs the write; the audit says who decided and how', async () => {
    const messages: string[] = [];
    const client = await elicitingClient(
      era,
      (message) => {
        messages.push(message);
        return { action: 'accept', content: { decision: 'allow_once' } };
      },
      `elicit-${era}`,
    );
    const result = await client.callTool({
      name: 'fleet__set_device_label',
      arguments: { sn: 'FL-000010', label: era },
    });
    expect(result.isError).not.toBe(true);
    expect(textOf(result)).toContain(`"label":"${era}"`);
    expect(messages[0]).toContain('fleet__set_device_label');
    const record = await lastRecord(`elicit-${era}`);
    expect(record?.status).toBe('ok');
    expect(record?.approval).toMatchObject({ decision: 'allow_once', channel: 'elicitation' });
    await client.close();
  });

  it('a declined elicitation denies the call and nothing runs', async () => {
    const client = await elicitingClient(era, () => ({ action: 'decline' }), `decline-${era}`);
    const result = await client.callTool({ name: 'fleet__reboot_device', arguments: { sn: 'FL-000011' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/denied by client user \(elicitation\)/);
    expect((await lastRecord(`decline-${era}`))?.status).toBe('denied');
    await client.close();
  });
});

describe('approval through the API and the CLI while the client waits', () => {
  it('API: allow for this session, then the next call runs without asking', async () => {
    const client = await connectClient(gateway.mcpUrl, tokens.ops, 'modern', { session: 'api-session' });
    const call = client.callTool({ name: 'fleet__set_device_label', arguments: { sn: 'FL-000012', label: 'a' } });
    const pending = await pendingFor('ops/api-session');
    expect(pending.options).toEqual(['allow_once', 'allow_session', 'deny']);
    expect((await decide(pending.id, 'allow_session', 'wrong-token-0123456789')).status).toBe(401);
    expect((await decide(pending.id, 'allow_session')).status).toBe(200);
    expect((await call).isError).not.toBe(true);
    const again = await client.callTool({
      name: 'fleet__set_device_label',
      arguments: { sn: 'FL-000012', label: 'b' },
    });
    expect(again.isError).not.toBe(true);
    expect((await lastRecord('api-session'))?.approval).toBeNull();
    await client.close();
  });

  it('destructive calls offer only allow once / deny, every time', async () => {
    const client = await connectClient(gateway.mcpUrl, tokens.ops, 'legacy', { session: 'destructive' });
    const call = client.callTool({ name: 'fleet__reboot_device', arguments: { sn: 'FL-000013' } });
    const pending = await pendingFor('ops/destructive');
    expect(pending.options).toEqual(['allow_once', 'deny']);
    const refused = await decide(pending.id, 'allow_session');
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('offers only allow_once, deny');
    await decide(pending.id, 'allow_once');
    expect((await call).isError).not.toBe(true);
    const second = client.callTool({ name: 'fleet__reboot_device', arguments: { sn: 'FL-000013' } });
    const next = await pendingFor('ops/destructive');
    expect(next.id).not.toBe(pending.id);
    await decide(next.id, 'deny');
    expect(textOf(await second)).toContain('denied by admin (api)');
    await client.close();
  });

  it('CLI: toolgate approve / deny, and the first decision wins', async () => {
    const client = await connectClient(gateway.mcpUrl, tokens.ops, 'modern', { session: 'cli-session' });
    const call = client.callTool({ name: 'fleet__set_device_label', arguments: { sn: 'FL-000014', label: 'cli' } });
    const pending = await pendingFor('ops/cli-session');
    const cli = ['dist/src/main.js', '--data-dir', gateway.dataDir];
    const listed = await run(process.execPath, [cli[0]!, 'approvals', ...cli.slice(1)]);
    expect(listed.stdout).toContain(pending.id);
    const approved = await run(process.execPath, [cli[0]!, 'approve', pending.id, ...cli.slice(1)]);
    expect(approved.stdout).toContain('allow_once');
    expect((await call).isError).not.toBe(true);
    const late = await run(process.execPath, [cli[0]!, 'deny', pending.id, ...cli.slice(1)]).catch(
      (error: { stderr: string }) => error,
    );
    expect('stderr' in late ? late.stderr : '').toMatch(/already decided: allow_once by cli/);
    const conflict = await decide(pending.id, 'deny');
    expect(conflict.status).toBe(409);
    await client.close();
  });

  it('two decisions racing: exactly one wins', async () => {
    const client = await connectClient(gateway.mcpUrl, tokens.ops, 'modern', { session: 'race' });
    const call = client.callTool({ name: 'fleet__set_device_label', arguments: { sn: 'FL-000015', label: 'r' } });
    const pending = await pendingFor('ops/race');
    const statuses = (await Promise.all([decide(pending.id, 'deny'), decide(pending.id, 'allow_once')])).map(
      (r) => r.status,
    );
    expect(statuses.sort()).toEqual([200, 409]);
    const result = await call;
    const record = await lastRecord('race');
    expect(record?.status).toBe(result.isError === true ? 'denied' : 'ok');
    await client.close();
  });
});

describe('expiry, withdrawal and changed definitions', () => {
  it('nobody answers: the call fails as expired after the timeout, and is recorded', async () => {
    const client = await connectClient(gateway.mcpUrl, tokens.ops, 'modern', { session: 'expiry' });
    const result = await client.callTool({
      name: 'fleet__set_device_label',
      arguments: { sn: 'FL-000016', label: 'e' },
    });
    expect(textOf(result)).toMatch(/approval for fleet__set_device_label expired after 3 s/);
    expect((await lastRecord('expiry'))?.status).toBe('expired');
    await client.close();
  });

  it('a client that cancels while waiting withdraws the request; nothing runs later', async () => {
    const client = await connectClient(gateway.mcpUrl, tokens.ops, 'legacy', { session: 'withdrawn' });
    const controller = new AbortController();
    const call = client.callTool(
      { name: 'fleet__set_device_label', arguments: { sn: 'FL-000017', label: 'never' } },
      { signal: controller.signal },
    );
    const pending = await pendingFor('ops/withdrawn');
    controller.abort();
    await expect(call).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const late = await decide(pending.id, 'allow_once');
    expect(late.status).toBe(409);
    expect(await late.text()).toContain('withdrawn');
    const status = await client.callTool({ name: 'fleet__get_device_status', arguments: { sn: 'FL-000017' } });
    expect(textOf(status)).not.toContain('never');
    await client.close();
  });
});

describe('allow for this session is dropped when the tool definition changes', () => {
  let mutable: TestGateway;
  beforeAll(async () => {
    mutable = await startTestGateway(
      baseConfig({
        mcpServers: { mutable: { command: process.execPath, args: ['test/fixtures/mutable-server.mjs'] } },
        tools: {},
        profiles: { ops: { services: ['mutable'], mode: 'approve', tokens: [tokens.ops] } },
      }),
    );
  });
  afterAll(async () => {
    await mutable.close();
  });

  it('asks again after the definition changed', async () => {
    let asked = 0;
    const client = await connectClient(mutable.mcpUrl, tokens.ops, 'legacy', {
      capabilities: { elicitation: { form: {} } },
    });
    client.setRequestHandler('elicitation/create', () => {
      asked += 1;
      return Promise.resolve({ action: 'accept', content: { decision: 'allow_session' } } as never);
    });
    const write = () => client.callTool({ name: 'mutable__write_thing', arguments: { value: 'v' } });
    expect(textOf(await write())).toContain('definition 1');
    expect(textOf(await write())).toContain('definition 1');
    expect(asked).toBe(1);
    await client.callTool({ name: 'mutable__bump_definition', arguments: {} });
    let changed = false;
    for (let attempt = 0; attempt < 50 && !changed; attempt++) {
      const { tools } = await client.listTools();
      changed = tools.find((tool) => tool.name === 'mutable__write_thing')?.description?.includes('version 2') === true;
      if (!changed) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(changed).toBe(true);
    expect(textOf(await write())).toContain('definition 2');
    expect(asked).toBe(2);
    await client.close();
  });
});

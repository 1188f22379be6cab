import type { Client } from '@modelcontextprotocol/client';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseConfig, connectClient, startTestGateway, tokens, type Era, type TestGateway } from './harness.js';
import {
  approvalsOf,
  auditOf,
  decide,
  labelOf,
  labelScript,
  pendingFor,
  runScript,
  scriptDirs,
  sleep,
  workspaceOf,
} from './run-script-support.js';

// run_script's one approval in `approve` mode, through the gateway with real bubblewrap + Python and the real
// demo fleet: answered through the API (allow once, deny, allow_session refused), withdrawn by the client,
// skipped for tools allowed for this session, and answered by elicitation in both eras.

let gateway: TestGateway;
const clients: Client[] = [];

beforeAll(async () => {
  gateway = await startTestGateway(baseConfig({ settings: { approvals: { timeoutSec: 15 } } }));
});

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await gateway?.close();
});

async function connect(token: string, era: Era, session: string, capabilities?: Record<string, unknown>) {
  const client = await connectClient(gateway.mcpUrl, token, era, {
    session,
    ...(capabilities === undefined ? {} : { capabilities }),
  });
  clients.push(client);
  return client;
}

describe('approve mode: one approval for the listed write tools', () => {
  it('approve mode: one approval (allow once / deny, the script on the card) answered through the API', async () => {
    const client = await connect(tokens.ops, 'modern', 'approve-once');
    // FL-000023..25: FL-000022 is one of the devices that never answer, so its label could not be read back.
    const code =
      'from agent_tools import call_many\n' +
      'rows = call_many("fleet__set_device_label", [{"sn": f"FL-00002{i}", "label": "approved"} for i in range(3, 6)])\n' +
      'print([r["previous"] for r in rows])\n';
    const running = runScript(client, code, ['fleet__set_device_label'], {}, 'label three devices');
    const pending = await pendingFor(gateway, 'ops/approve-once');
    expect(pending).toMatchObject({
      kind: 'script',
      tools: ['fleet__set_device_label'],
      options: ['allow_once', 'deny'],
      script: code,
      description: 'label three devices',
    });
    const refused = await decide(gateway, pending.id, 'allow_session');
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('offers only allow_once, deny');
    expect((await decide(gateway, pending.id, 'allow_once')).status).toBe(200);
    const result = await running;
    expect(result.isError, result.text).toBe(false);
    expect(result.firstLine).toMatch(/^run_script ok · 3 calls \(0 failed\)/);
    expect(result.text.split('\n')[1]).toBe('[None, None, None]');
    expect(await labelOf(client, 'FL-000025')).toBe('approved');
    // Three inner write calls, still only the one approval.
    expect(await approvalsOf(gateway, 'ops/approve-once')).toHaveLength(1);
    const [record] = (await auditOf(gateway, 'ops/approve-once')).filter((row) => row.kind === 'script');
    expect(record?.approval).toMatchObject({ decision: 'allow_once', channel: 'api' });
  });

  it('approve mode: a denied script does not run', async () => {
    const client = await connect(tokens.ops, 'legacy', 'approve-deny');
    const running = runScript(client, labelScript('FL-000030', 'denied'), ['fleet__set_device_label']);
    const pending = await pendingFor(gateway, 'ops/approve-deny');
    await decide(gateway, pending.id, 'deny');
    const result = await running;
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/denied by admin \(api\)/);
    expect(await labelOf(client, 'FL-000030')).toBeNull();
    expect(existsSync(join(workspaceOf(gateway, 'ops/approve-deny'), 'ran.txt'))).toBe(false);
    expect(await scriptDirs(gateway, 'ops/approve-deny')).toEqual([]);
    expect((await auditOf(gateway, 'ops/approve-deny')).find((row) => row.kind === 'script')?.status).toBe('denied');
  });

  it('approve mode: a client that gives up while the approval is pending withdraws it; nothing runs', async () => {
    const client = await connect(tokens.ops, 'legacy', 'approve-withdrawn');
    const controller = new AbortController();
    const running = runScript(client, labelScript('FL-000034', 'late'), ['fleet__set_device_label'], {
      signal: controller.signal,
    });
    running.catch(() => undefined);
    const pending = await pendingFor(gateway, 'ops/approve-withdrawn');
    controller.abort();
    await expect(running).rejects.toThrow();
    await sleep(300);
    expect((await decide(gateway, pending.id, 'allow_once')).status).toBe(409);
    expect(await labelOf(client, 'FL-000034')).toBeNull();
    expect(await scriptDirs(gateway, 'ops/approve-withdrawn')).toEqual([]);
    expect((await auditOf(gateway, 'ops/approve-withdrawn')).find((row) => row.kind === 'script')?.status).toBe(
      'cancelled',
    );
  });

  it('approve mode: no approval when every listed tool is already allowed for this session', async () => {
    const client = await connect(tokens.ops, 'modern', 'approve-granted');
    const direct = client.callTool({ name: 'fleet__set_device_label', arguments: { sn: 'FL-000031', label: 'a' } });
    await decide(gateway, (await pendingFor(gateway, 'ops/approve-granted')).id, 'allow_session');
    expect((await direct).isError).not.toBe(true);
    const result = await runScript(client, labelScript('FL-000031', 'granted'), ['fleet__set_device_label']);
    expect(result.isError, result.text).toBe(false);
    expect(await labelOf(client, 'FL-000031')).toBe('granted');
    expect(await approvalsOf(gateway, 'ops/approve-granted')).toHaveLength(1);
  });
});

describe.each(['legacy', 'modern'] as const)('script approval by elicitation (%s era)', (era) => {
  it('the client answers allow once and the script runs', async () => {
    const messages: string[] = [];
    const client = await connect(tokens.ops, era, `elicit-${era}`, { elicitation: { form: {} } });
    client.setRequestHandler('elicitation/create', (request) => {
      messages.push((request.params as { message: string }).message);
      return Promise.resolve({ action: 'accept', content: { decision: 'allow_once' } } as never);
    });
    const sn = era === 'legacy' ? 'FL-000040' : 'FL-000041';
    const result = await runScript(client, labelScript(sn, era), ['fleet__set_device_label'], {}, `elicit ${era}`);
    expect(result.isError, result.text).toBe(false);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('fleet__set_device_label');
    expect(messages[0]).toContain(`elicit ${era}`);
    expect(await labelOf(client, sn)).toBe(era);
    const [record] = (await auditOf(gateway, `ops/elicit-${era}`)).filter((row) => row.kind === 'script');
    expect(record?.approval).toMatchObject({ decision: 'allow_once', channel: 'elicitation' });
  });
});

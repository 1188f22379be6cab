import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayEvent } from '../src/events/event-bus.js';
import {
  backgroundNotes,
  movedId,
  verifiedBody,
  waitFor,
  webhookSecret,
  startWebhookReceiver,
  type WebhookReceiver,
} from './background-support.js';
import {
  baseConfig,
  connectClient,
  fleetService,
  startTestGateway,
  textOf,
  tokens,
  type TestGateway,
} from './harness.js';

// Background calls end to end (PRODUCT.md §6, issue 5): a real gateway, real fleet processes, real bubblewrap +
// Python, a real webhook receiver. Cancellation from the API and CLI and webhook retries are in
// background-cancel.test.ts, kill -9 and restart in background-restart.test.ts.

let gateway: TestGateway;
let receiver: WebhookReceiver;
const events: GatewayEvent[] = [];
const clients: Client[] = [];
let unsubscribe: () => void = () => undefined;

beforeAll(async () => {
  receiver = await startWebhookReceiver(() => 200);
  gateway = await startTestGateway(
    baseConfig({
      mcpServers: {
        fleet: fleetService({ FLEET_REPORT_SECONDS: '2' }),
        // Every device answers after 2.5 s: a direct call that crosses a 1 s threshold.
        slow: fleetService({ FLEET_FIXED_LATENCY_MS: '2500', FLEET_REPORT_SECONDS: '10' }),
      },
      tools: {
        fleet__export_fleet_report: { longTask: true },
        slow__export_fleet_report: { longTask: true, class: 'write' },
      },
      profiles: {
        auto: {
          services: ['fleet', 'slow'],
          mode: 'auto',
          tokens: [tokens.auto],
          webhook: { url: receiver.url('/auto'), secret: webhookSecret },
        },
        ops: { services: ['fleet', 'slow'], mode: 'approve', tokens: [tokens.ops] },
      },
      settings: { backgroundCalls: { autoAfterSec: 1 }, approvals: { timeoutSec: 15 } },
    }),
  );
  unsubscribe = gateway.gateway.events.subscribe((event) => events.push(event));
});

afterAll(async () => {
  unsubscribe();
  await Promise.allSettled(clients.map((client) => client.close()));
  await gateway?.close();
  await receiver?.close();
});

async function connect(token: string, session: string): Promise<Client> {
  const client = await connectClient(gateway.mcpUrl, token, 'modern', { session });
  clients.push(client);
  return client;
}

/** A quick call whose reply carries whatever background results wait for the session. */
function quickCall(client: Client) {
  return client.callTool({ name: 'fleet__get_device_status', arguments: { sn: 'FL-000001' } });
}

async function finished(id: string) {
  return waitFor(`${id} to end`, async () => {
    const call = await gateway.gateway.store.getBackground(id);
    return call !== undefined && call.status !== 'running' ? call : undefined;
  });
}

function eventsOf(type: GatewayEvent['type'], id: string): GatewayEvent[] {
  return events.filter((event) => event.type === type && 'backgroundId' in event && event.backgroundId === id);
}

describe('a direct call crossing autoAfterSec', () => {
  it('answers at once, outlives its client, and is delivered once through every channel to its session only', async () => {
    let client = await connect(tokens.auto, 'direct');
    const other = await connect(tokens.auto, 'direct-other');
    const started = Date.now();
    const reply = await client.callTool({ name: 'slow__get_device_status', arguments: { sn: 'FL-000003' } });
    const waited = Date.now() - started;
    const id = movedId(reply);
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(waited).toBeLessThan(2_400);
    expect(textOf(reply)).toContain('slow__get_device_status is still running');
    // The client's request is over and the client goes away; the work goes on.
    await client.close();
    expect((await gateway.gateway.store.getBackground(id))?.status).toBe('running');

    const call = await finished(id);
    expect(call).toMatchObject({
      sessionId: 'auto/direct',
      kind: 'call',
      tool: 'slow__get_device_status',
      status: 'ok',
    });
    expect(call.finishedAt! - call.startedAt).toBeGreaterThanOrEqual(1_000);
    expect(JSON.stringify(call.result)).toContain('FL-000003');
    expect(call.error).toBeNull();

    // (a) Another session of the same profile never sees it; the same session, reconnected, gets it once.
    expect(backgroundNotes(await quickCall(other))).toEqual([]);
    client = await connect(tokens.auto, 'direct');
    const next = await quickCall(client);
    const notes = backgroundNotes(next);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(
      new RegExp(`^\\[toolgate: background call ${id} \\(slow__get_device_status\\) ended: ok\\]\\n`),
    );
    expect(notes[0]).toContain('"sn":"FL-000003"');
    expect(textOf(next)).toContain('"sn":"FL-000001"');
    expect(backgroundNotes(await quickCall(client))).toEqual([]);

    // (b) One event on the bus.
    expect(eventsOf('background.started', id)).toHaveLength(1);
    expect(eventsOf('background.finished', id)).toEqual([
      { type: 'background.finished', backgroundId: id, sessionId: 'auto/direct', status: 'ok' },
    ]);

    // (c) One signed webhook delivery.
    await waitFor('the webhook', async () =>
      (await gateway.gateway.store.getBackground(id))?.delivery.webhook.state === 'delivered' ? true : undefined,
    );
    const posts = receiver.deliveriesOf(id);
    expect(posts).toHaveLength(1);
    expect(posts[0]!.path).toBe('/auto');
    const body = verifiedBody(posts[0]!);
    expect(body).toMatchObject({
      session: 'auto/direct',
      callId: id,
      tool: 'slow__get_device_status',
      kind: 'call',
      status: 'ok',
    });
    expect(new Date(body.startedAt as string).getTime()).toBe(call.startedAt);
    expect(new Date(body.finishedAt as string).getTime()).toBe(call.finishedAt);
    expect(JSON.stringify(body.result)).toContain('FL-000003');
    expect(body).not.toHaveProperty('error');

    // (d) The tool lists and reads it for its session; another session gets "not found".
    const listed = await client.callTool({ name: 'background_calls', arguments: { action: 'list' } });
    expect(listed.structuredContent).toMatchObject({ calls: [{ id, tool: 'slow__get_device_status', status: 'ok' }] });
    const got = await client.callTool({ name: 'background_calls', arguments: { action: 'get', id } });
    expect(textOf(got)).toContain(`background call ${id} (slow__get_device_status) ended: ok`);
    expect(textOf(got)).toContain('"sn":"FL-000003"');
    for (const action of ['get', 'cancel']) {
      const refused = await other.callTool({ name: 'background_calls', arguments: { action, id } });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain(`no background call ${id}`);
    }
    const otherList = await other.callTool({ name: 'background_calls', arguments: { action: 'list' } });
    expect(textOf(otherList)).toBe('no background calls in this session');

    // State per channel and the completed audit record.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const stored = await gateway.gateway.store.getBackground(id);
    expect(stored?.delivery).toEqual({
      nextResult: 'delivered',
      event: 'delivered',
      webhook: { state: 'delivered', attempts: 1 },
      tool: 'delivered',
    });
    expect(receiver.deliveriesOf(id)).toHaveLength(1);
    expect(eventsOf('background.finished', id)).toHaveLength(1);
    const record = await gateway.gateway.store.getCall(call.callId!);
    expect(record).toMatchObject({
      status: 'ok',
      backgroundId: id,
      tool: 'slow__get_device_status',
      sessionId: 'auto/direct',
    });
    expect(record?.durationMs).toBeGreaterThanOrEqual(2_400);
  });

  it('a quick call below the threshold answers normally and leaves no background call', async () => {
    const client = await connect(tokens.auto, 'quick');
    const reply = await quickCall(client);
    expect(reply.structuredContent).toMatchObject({ sn: 'FL-000001' });
    expect(await gateway.gateway.store.listBackground({ sessionId: 'auto/quick' })).toEqual([]);
  });
});

describe('a script crossing autoAfterSec', () => {
  it('answers at once, keeps running after its client left, and its reply arrives with the next result', async () => {
    let client = await connect(tokens.auto, 'script');
    const code = 'import time\ntime.sleep(2.5)\nprint("slept well", flush=True)\n';
    const started = Date.now();
    const reply = await client.callTool({ name: 'run_script', arguments: { code, tools: [], description: 'nap' } });
    expect(Date.now() - started).toBeLessThan(2_400);
    const id = movedId(reply);
    expect(textOf(reply)).toContain('run_script is still running');
    await client.close();

    const call = await finished(id);
    expect(call).toMatchObject({ sessionId: 'auto/script', kind: 'script', tool: 'run_script', status: 'ok' });
    expect(call.scriptId).toEqual(expect.any(String));
    client = await connect(tokens.auto, 'script');
    const notes = backgroundNotes(await quickCall(client));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(
      new RegExp(`^\\[toolgate: background call ${id} \\(run_script\\) ended: ok\\]\\nrun_script ok · `),
    );
    expect(notes[0]).toContain('slept well');
    expect(backgroundNotes(await quickCall(client))).toEqual([]);
    expect(eventsOf('background.finished', id)).toHaveLength(1);
    await waitFor('the webhook', () => (receiver.deliveriesOf(id).length > 0 ? true : undefined));
    expect(verifiedBody(receiver.deliveriesOf(id)[0]!)).toMatchObject({
      session: 'auto/script',
      kind: 'script',
      status: 'ok',
    });
    const record = await gateway.gateway.store.getCall(call.callId!);
    expect(record).toMatchObject({ kind: 'script', status: 'ok', backgroundId: id });
    expect(record?.durationMs).toBeGreaterThanOrEqual(2_500);
  });
});

describe('long-task tools', () => {
  it('a read long task goes to the background at once, without an approval even in approve mode', async () => {
    const client = await connect(tokens.ops, 'long-read');
    const started = Date.now();
    const id = movedId(await client.callTool({ name: 'fleet__export_fleet_report', arguments: {} }));
    expect(Date.now() - started).toBeLessThan(800);
    const call = await finished(id);
    expect(call).toMatchObject({ sessionId: 'ops/long-read', kind: 'call', status: 'ok' });
    // Read through the tool first: the next result does not repeat it.
    const got = await client.callTool({ name: 'background_calls', arguments: { action: 'get', id } });
    expect(textOf(got)).toMatch(/ended: ok\]\n.*"byStatus"/s);
    expect(backgroundNotes(await quickCall(client))).toEqual([]);
    const record = await gateway.gateway.store.getCall(call.callId!);
    expect(record).toMatchObject({ status: 'ok', approval: null, backgroundId: id });
    // No webhook is configured for ops.
    expect(call.delivery.webhook).toEqual({ state: 'none', attempts: 0 });
    expect(receiver.deliveriesOf(id)).toEqual([]);
  });

  it('a long task of class write asks first; once allowed it goes to the background; the tool cancels it', async () => {
    const client = await connect(tokens.ops, 'long-write');
    const pending = client.callTool({ name: 'slow__export_fleet_report', arguments: {} });
    const approval = await waitFor('the approval', async () => {
      const response = await fetch(`${gateway.url}/api/approvals?status=pending&session=ops/long-write`, {
        headers: { Authorization: `Bearer ${tokens.admin}` },
      });
      return ((await response.json()) as { approvals: Array<{ id: string }> }).approvals[0];
    });
    expect(await gateway.gateway.store.listBackground({ sessionId: 'ops/long-write' })).toEqual([]);
    const decided = await fetch(`${gateway.url}/api/approvals/${approval.id}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tokens.admin}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ decision: 'allow_once' }),
    });
    expect(decided.status).toBe(200);
    const allowedAt = Date.now();
    const id = movedId(await pending);
    expect(Date.now() - allowedAt).toBeLessThan(800);
    expect((await gateway.gateway.store.getBackground(id))?.status).toBe('running');

    const cancelled = await client.callTool({ name: 'background_calls', arguments: { action: 'cancel', id } });
    expect(cancelled.structuredContent).toEqual({ id, status: 'cancelled' });
    const call = await finished(id);
    expect(call.status).toBe('cancelled');
    expect(call.finishedAt! - call.startedAt).toBeLessThan(5_000);
    // The cancel reply is the session's next tool result after the end, so it carries the outcome; once.
    const notes = backgroundNotes(cancelled);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain(`background call ${id} (slow__export_fleet_report) ended: cancelled`);
    expect(backgroundNotes(await quickCall(client))).toEqual([]);
    expect(eventsOf('background.finished', id)).toEqual([
      { type: 'background.finished', backgroundId: id, sessionId: 'ops/long-write', status: 'cancelled' },
    ]);
    const record = await gateway.gateway.store.getCall(call.callId!);
    expect(record).toMatchObject({
      status: 'cancelled',
      backgroundId: id,
      approval: { decision: 'allow_once', channel: 'api' },
    });
    expect(record?.durationMs).toBeLessThan(5_000);
  });

  it('a long task can never be called from a script', async () => {
    const client = await connect(tokens.auto, 'long-script');
    const code =
      'from agent_tools import call, ToolError\ntry:\n    call("fleet__export_fleet_report", {})\nexcept ToolError as e:\n    print("refused:", e.message)\n';
    const reply = await client.callTool({
      name: 'run_script',
      arguments: { code, tools: ['fleet__export_fleet_report'] },
    });
    expect(textOf(reply)).toMatch(
      /^run_script rejected before it started: fleet__export_fleet_report can only run as a long task, never from a script/,
    );
    expect(await gateway.gateway.store.listBackground({ sessionId: 'auto/long-script' })).toEqual([]);
  });
});

import type { Client } from '@modelcontextprotocol/client';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetServerPath } from '../src/config/default-config.js';
import {
  backgroundNotes,
  freePort,
  movedId,
  sandboxProcessesOf,
  scriptProcesses,
  sleep,
  sleepingScript,
  startWebhookReceiver,
  stillAlive,
  verifiedBody,
  waitFor,
  webhookSecret,
  type WebhookReceiver,
} from './background-support.js';
import { baseConfig, connectClient, fleetService, startTestGateway, tokens, type TestGateway } from './harness.js';

// Cancelling background calls through the API (an upstream call and a script) and the CLI, and webhooks that fail.
// The `watched` service is the demo fleet behind a recorder, so the test sees MCP cancellation reach it.

const run = promisify(execFile);
const deadToken = 'dead-webhook-token-0123456789';
const flakyToken = 'flaky-webhook-token-0123456789';
let gateway: TestGateway;
let receiver: WebhookReceiver;
let recordDir: string;
const clients: Client[] = [];

beforeAll(async () => {
  recordDir = mkdtempSync(join(tmpdir(), 'toolgate-record-'));
  // /dead always fails; /flaky fails the first attempt of every delivery; /auto always succeeds.
  receiver = await startWebhookReceiver((path, earlier) =>
    path === '/dead' ? 500 : path === '/flaky' && earlier === 0 ? 500 : 200,
  );
  const webhook = (path: string) => ({ url: receiver.url(path), secret: webhookSecret });
  gateway = await startTestGateway(
    baseConfig({
      // A fixed port: `toolgate cancel` finds the gateway through the config's listen address.
      listen: { host: '127.0.0.1', port: await freePort() },
      mcpServers: {
        fleet: fleetService(),
        slow: fleetService({ FLEET_FIXED_LATENCY_MS: '1500' }),
        watched: {
          command: process.execPath,
          args: ['test/fixtures/recording-fleet.mjs'],
          env: {
            FLEET_SERVER: fleetServerPath(),
            FLEET_REPORT_SECONDS: '20',
            RECORD_FILE: join(recordDir, 'watched.jsonl'),
          },
        },
      },
      tools: { watched__export_fleet_report: { longTask: true } },
      profiles: {
        auto: { services: ['fleet', 'watched'], mode: 'auto', tokens: [tokens.auto], webhook: webhook('/auto') },
        dead: { services: ['fleet', 'slow'], mode: 'auto', tokens: [deadToken], webhook: webhook('/dead') },
        flaky: { services: ['fleet', 'slow'], mode: 'auto', tokens: [flakyToken], webhook: webhook('/flaky') },
      },
      settings: { backgroundCalls: { autoAfterSec: 1 } },
    }),
  );
});

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await gateway?.close();
  await receiver?.close();
  rmSync(recordDir, { recursive: true, force: true });
});

async function connect(token: string, session: string): Promise<Client> {
  const client = await connectClient(gateway.mcpUrl, token, 'legacy', { session });
  clients.push(client);
  return client;
}

function quickCall(client: Client) {
  return client.callTool({ name: 'fleet__get_device_status', arguments: { sn: 'FL-000001' } });
}

function cancelViaApi(id: string, token = tokens.admin): Promise<Response> {
  return fetch(`${gateway.url}/api/background/${id}/cancel`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}` },
  });
}

interface RecordedLine {
  at: number;
  direction: 'in' | 'out';
  line: string;
}

function recorded(): RecordedLine[] {
  return readFileSync(join(recordDir, 'watched.jsonl'), 'utf8')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as RecordedLine);
}

describe('cancel through the API', () => {
  it('an upstream long task: MCP cancellation reaches the service, its progress stops, cancelled is delivered', async () => {
    const client = await connect(tokens.auto, 'cancel-api');
    const reply = await client.callTool(
      { name: 'watched__export_fleet_report', arguments: {} },
      { onprogress: () => undefined },
    );
    const id = movedId(reply);
    const progress = () =>
      recorded().filter((entry) => entry.direction === 'out' && entry.line.includes('notifications/progress'));
    // 50 steps over 20 s: a step every 400 ms.
    await waitFor('progress from the fleet', () => (progress().length >= 2 ? true : undefined));

    expect((await cancelViaApi(id, tokens.auto)).status).toBe(401);
    expect((await cancelViaApi('bg_nonexistent')).status).toBe(404);
    const cancelledAt = Date.now();
    const response = await cancelViaApi(id);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { background: { id: string; status: string } }).background).toMatchObject({
      id,
      status: 'cancelled',
    });
    expect((await cancelViaApi(id)).status).toBe(409);

    await sleep(1_200);
    const cancelNotice = recorded().find(
      (entry) => entry.direction === 'in' && entry.line.includes('notifications/cancelled'),
    );
    expect(cancelNotice, 'notifications/cancelled sent to the service').toBeDefined();
    expect(cancelNotice!.at - cancelledAt).toBeLessThan(1_000);
    const last = progress().at(-1)!;
    expect(last.at).toBeLessThan(cancelledAt + 600);
    expect(progress().length).toBeLessThan(20);

    const call = await gateway.gateway.store.getBackground(id);
    expect(call).toMatchObject({ status: 'cancelled', kind: 'call', tool: 'watched__export_fleet_report' });
    expect(call!.finishedAt! - call!.startedAt).toBeLessThan(5_000);
    const record = await gateway.gateway.store.getCall(call!.callId!);
    expect(record).toMatchObject({ status: 'cancelled', backgroundId: id });
    expect(record?.durationMs).toBeLessThan(5_000);
    const notes = backgroundNotes(await quickCall(client));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain(`background call ${id} (watched__export_fleet_report) ended: cancelled`);
    await waitFor('the webhook', () => (receiver.deliveriesOf(id).length > 0 ? true : undefined));
    expect(receiver.deliveriesOf(id)).toHaveLength(1);
    const body = verifiedBody(receiver.deliveriesOf(id)[0]!);
    expect(body).toMatchObject({ callId: id, kind: 'call', status: 'cancelled' });
    expect(body.error).toMatch(/cancel/);
    expect(body).not.toHaveProperty('result');
  });

  it('a script: its whole process tree is gone within 2 s and cancelled is delivered', async () => {
    const client = await connect(tokens.auto, 'cancel-script');
    const marker = `tg-bg-${randomBytes(6).toString('hex')}`;
    const id = movedId(
      await client.callTool({ name: 'run_script', arguments: { code: sleepingScript(marker, 60), tools: [] } }),
    );
    const tree = await waitFor('the script processes', async () => {
      const found = await scriptProcesses(marker);
      return found.length >= 2 ? found : undefined;
    });
    const response = await cancelViaApi(id);
    expect(response.status).toBe(200);
    const cancelledAt = Date.now();
    await waitFor(
      'the tree to end',
      async () => ((await stillAlive(tree.map((info) => info.pid))).length === 0 ? true : undefined),
      2_000,
    );
    await waitFor(
      'no sandbox process',
      async () => ((await sandboxProcessesOf(gateway.dataDir)).length === 0 ? true : undefined),
      2_000 - (Date.now() - cancelledAt),
    );

    const call = await gateway.gateway.store.getBackground(id);
    expect(call).toMatchObject({ status: 'cancelled', kind: 'script' });
    expect((await gateway.gateway.store.getCall(call!.callId!))?.status).toBe('cancelled');
    const notes = backgroundNotes(await quickCall(client));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(
      new RegExp(`^\\[toolgate: background call ${id} \\(run_script\\) ended: cancelled\\]\\nrun_script cancelled · `),
    );
    expect(notes[0]).not.toContain('slept well');
  });
});

describe('cancel from the CLI', () => {
  it('toolgate cancel ID asks the running gateway; toolgate background lists the outcome', async () => {
    const client = await connect(tokens.auto, 'cli');
    const id = movedId(await client.callTool({ name: 'watched__export_fleet_report', arguments: {} }));
    const cli = join(process.cwd(), 'dist/src/main.js');
    const where = ['--config', join(dirname(gateway.dataDir), 'toolgate.json'), '--data-dir', gateway.dataDir];
    const cancelled = await run(process.execPath, [cli, 'cancel', id, ...where]);
    expect(cancelled.stdout.trim()).toBe(`${id}: cancelled`);
    expect((await gateway.gateway.store.getBackground(id))?.status).toBe('cancelled');
    const again = await run(process.execPath, [cli, 'cancel', id, ...where]).catch(
      (error: { stderr: string; code: number }) => error,
    );
    expect('code' in again ? again.code : 0).not.toBe(0);
    expect('stderr' in again ? again.stderr : '').toMatch(/is not running \(cancelled\)/);
    const listed = await run(process.execPath, [cli, 'background', '--session', 'auto/cli', '--json', ...where]);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ id, status: 'cancelled', sessionId: 'auto/cli' }]);
    const notes = backgroundNotes(await quickCall(client));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain(`${id} (watched__export_fleet_report) ended: cancelled`);
  });
});

describe('webhooks that fail', () => {
  it('a 500 first, then 200: delivered after one retry, two attempts recorded', async () => {
    const client = await connect(flakyToken, 'flaky');
    const id = movedId(await client.callTool({ name: 'slow__get_device_status', arguments: { sn: 'FL-000005' } }));
    await waitFor('the failed first attempt', () => (receiver.deliveriesOf(id).length === 1 ? true : undefined));
    const failedAt = Date.now();
    const afterFirst = await gateway.gateway.store.getBackground(id);
    expect(afterFirst?.delivery.webhook).toMatchObject({ state: 'pending', attempts: 1, lastError: 'HTTP 500' });
    const delivered = await waitFor(
      'the retried delivery',
      async () => {
        const call = await gateway.gateway.store.getBackground(id);
        return call?.delivery.webhook.state === 'delivered' ? call : undefined;
      },
      4_000,
    );
    expect(Date.now() - failedAt).toBeGreaterThanOrEqual(800);
    expect(delivered.delivery.webhook.attempts).toBeGreaterThanOrEqual(2);
    const posts = receiver.deliveriesOf(id);
    expect(posts.map((post) => post.answered)).toEqual([500, 200]);
    // Both attempts carry the same signed body.
    expect(posts[1]!.body).toBe(posts[0]!.body);
    expect(verifiedBody(posts[1]!)).toMatchObject({ session: 'flaky/flaky', callId: id, status: 'ok' });
    await sleep(1_500);
    expect(receiver.deliveriesOf(id)).toHaveLength(2);
  });

  it('a webhook that always fails blocks neither other calls nor the other channels', async () => {
    const client = await connect(deadToken, 'dead');
    const id = movedId(await client.callTool({ name: 'slow__get_device_status', arguments: { sn: 'FL-000006' } }));
    await waitFor('the first failed attempt', () => (receiver.deliveriesOf(id).length >= 1 ? true : undefined));
    const started = Date.now();
    const next = await quickCall(client);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(backgroundNotes(next)).toHaveLength(1);
    expect(backgroundNotes(next)[0]).toContain(`${id} (slow__get_device_status) ended: ok`);
    // A second background call in the same profile goes on and ends while the first webhook keeps failing.
    const second = movedId(await client.callTool({ name: 'slow__get_device_status', arguments: { sn: 'FL-000007' } }));
    await waitFor('the second call to end', async () =>
      (await gateway.gateway.store.getBackground(second))?.status === 'ok' ? true : undefined,
    );
    const call = await gateway.gateway.store.getBackground(id);
    expect(call?.delivery).toMatchObject({
      nextResult: 'delivered',
      event: 'delivered',
      webhook: { state: 'pending', lastError: 'HTTP 500' },
    });
    expect(call!.delivery.webhook.attempts).toBeGreaterThanOrEqual(1);
    expect(receiver.deliveriesOf(id).every((post) => post.answered === 500)).toBe(true);
  });
});

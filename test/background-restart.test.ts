import type { Client } from '@modelcontextprotocol/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../src/store/store.js';
import type { BackgroundCall } from '../src/store/store-records.js';
import {
  backgroundNotes,
  freePort,
  movedId,
  processTable,
  sandboxProcessesOf,
  scriptProcesses,
  sleepingScript,
  startWebhookReceiver,
  stillAlive,
  verifiedBody,
  waitFor,
  webhookSecret,
  type WebhookReceiver,
} from './background-support.js';
import { baseConfig, connectClient, fleetService, textOf, tokens } from './harness.js';

// kill -9 of a real `toolgate serve` process with a script and a direct call in the background, then a restart on
// the same data dir: both are failed as interrupted, the failure is delivered, nothing of the old gateway is left.

let dir: string;
let configPath: string;
let baseUrl: string;
let receiver: WebhookReceiver;
const gateways: ChildProcess[] = [];
const clients: Client[] = [];
let leftovers: number[] = [];
/** While true the webhook receiver answers 500, so a delivery is still being retried when the gateway dies. */
let webhookDown = true;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'toolgate-restart-'));
  receiver = await startWebhookReceiver(() => (webhookDown ? 500 : 200));
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  configPath = join(dir, 'toolgate.json');
  const config = baseConfig({
    listen: { host: '127.0.0.1', port },
    mcpServers: {
      fleet: fleetService({ FLEET_REPORT_SECONDS: '60' }),
      slow: fleetService({ FLEET_FIXED_LATENCY_MS: '1500' }),
    },
    profiles: {
      auto: {
        services: ['fleet', 'slow'],
        mode: 'auto',
        tokens: [tokens.auto],
        webhook: { url: receiver.url('/auto'), secret: webhookSecret },
      },
    },
    settings: { backgroundCalls: { autoAfterSec: 1 } },
  });
  writeFileSync(configPath, JSON.stringify(config));
});

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  for (const child of gateways) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }
  // Fleet processes of the killed gateway that did not exit on EOF would fail the test; do not leave them behind.
  for (const pid of await stillAlive(leftovers)) process.kill(pid, 'SIGKILL');
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Starts `toolgate serve` as a child process and waits for /health. */
async function startGateway(): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['dist/src/main.js', 'serve', '--config', configPath, '--data-dir', join(dir, 'data')],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  gateways.push(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor(
    'the gateway to serve',
    async () => {
      if (child.exitCode !== null) throw new Error(`gateway exited: ${output}`);
      const healthy = await fetch(`${baseUrl}/health`).then(
        (response) => response.ok,
        () => false,
      );
      return healthy && output.includes('service fleet: up') ? true : undefined;
    },
    15_000,
  );
  return child;
}

async function connect(session: string): Promise<Client> {
  const client = await connectClient(`${baseUrl}/mcp`, tokens.auto, 'modern', { session });
  clients.push(client);
  return client;
}

describe('kill -9 of the gateway, then a restart', () => {
  it('running background calls become interrupted, the failure is delivered, nothing is left running', async () => {
    const first = await startGateway();
    const firstPid = first.pid!;
    const client = await connect('restart');
    // A call that ends before the kill, while its webhook is failing and waiting for a retry.
    const doneId = movedId(await client.callTool({ name: 'slow__get_device_status', arguments: { sn: 'FL-000009' } }));
    const marker = `tg-restart-${randomBytes(6).toString('hex')}`;
    const scriptReply = await client.callTool({
      name: 'run_script',
      arguments: { code: sleepingScript(marker, 60), tools: [] },
    });
    const scriptId = movedId(scriptReply);
    const exportReply = await client.callTool({ name: 'fleet__export_fleet_report', arguments: {} });
    const callId = movedId(exportReply);
    const notesBeforeKill = [...backgroundNotes(scriptReply), ...backgroundNotes(exportReply)];
    const script = await waitFor('the script processes', async () => {
      const found = await scriptProcesses(marker);
      return found.length >= 2 ? found : undefined;
    });
    const children = (await processTable()).filter((info) => info.ppid === firstPid);
    const fleets = children.filter((info) => info.cmdline.includes('fleet-server.js'));
    const bwraps = children.filter((info) => /^(\S*\/)?bwrap /.test(info.cmdline));
    expect(fleets).toHaveLength(2);
    expect(bwraps.length).toBeGreaterThanOrEqual(1);
    leftovers = fleets.map((info) => info.pid);

    await waitFor('the call to end', () =>
      receiver.deliveriesOf(doneId).length > 0 || notesBeforeKill.length > 0 ? true : undefined,
    );
    notesBeforeKill.push(
      ...backgroundNotes(await client.callTool({ name: 'fleet__get_device_status', arguments: { sn: 'FL-000002' } })),
    );
    expect(notesBeforeKill).toHaveLength(1);
    expect(notesBeforeKill[0]).toContain(`background call ${doneId} (slow__get_device_status) ended: ok`);
    await waitFor('a failed webhook attempt', () => (receiver.deliveriesOf(doneId).length > 0 ? true : undefined));
    expect(receiver.deliveriesOf(doneId)[0]?.answered).toBe(500);
    const exited = new Promise((resolve) => first.once('exit', resolve));
    first.kill('SIGKILL');
    await exited;
    await client.close().catch(() => undefined);

    const oldPids = [...script, ...bwraps].map((info) => info.pid);
    await waitFor(
      'the old sandbox to end',
      async () => ((await stillAlive(oldPids)).length === 0 ? true : undefined),
      3_000,
    );
    await waitFor(
      'no sandbox process',
      async () => ((await sandboxProcessesOf(join(dir, 'data'))).length === 0 ? true : undefined),
      3_000,
    );
    await waitFor(
      'the old fleet to exit on EOF',
      async () => ((await stillAlive(leftovers)).length === 0 ? true : undefined),
      5_000,
    );

    webhookDown = false;
    await startGateway();
    const store = openSqliteStore(join(dir, 'data', 'toolgate.db'));
    try {
      for (const id of [scriptId, callId]) {
        const call = await store.getBackground(id);
        expect(call).toMatchObject({
          status: 'interrupted',
          error: 'interrupted by a gateway restart',
          sessionId: 'auto/restart',
        });
        expect(call?.finishedAt).toEqual(expect.any(Number));
        const record = await store.getCall(call!.callId!);
        expect(record?.status).toBe('interrupted');
        expect(record?.durationMs).toBeGreaterThanOrEqual(500);
        expect(record?.backgroundId).toBe(id);
      }
      expect((await store.getBackground(scriptId))?.kind).toBe('script');
      expect((await store.getBackground(callId))?.kind).toBe('call');
      expect((await store.getBackground(doneId))?.status).toBe('ok');
    } finally {
      await store.close();
    }

    // Delivered like a result: to the session's next tool result (the session header survives the restart)...
    const again = await connect('restart');
    const next = await again.callTool({ name: 'fleet__get_device_status', arguments: { sn: 'FL-000002' } });
    const notes = backgroundNotes(next);
    // The call that had ended was delivered before the kill and is not delivered again.
    expect(notes).toHaveLength(2);
    for (const [id, tool] of [
      [scriptId, 'run_script'],
      [callId, 'fleet__export_fleet_report'],
    ] as const) {
      const note = notes.find((text) => text.includes(id));
      expect(note).toBe(
        `[toolgate: background call ${id} (${tool}) ended: interrupted]\ninterrupted by a gateway restart`,
      );
    }
    expect(
      backgroundNotes(await again.callTool({ name: 'fleet__get_device_status', arguments: { sn: 'FL-000002' } })),
    ).toEqual([]);
    // ...through the tool...
    const listed = await again.callTool({ name: 'background_calls', arguments: { action: 'list' } });
    const calls = (listed.structuredContent as { calls: Array<{ id: string; status: string }> }).calls;
    expect(calls.map((call) => [call.id, call.status]).sort()).toEqual(
      [
        [scriptId, 'interrupted'],
        [callId, 'interrupted'],
        [doneId, 'ok'],
      ].sort(),
    );
    expect(
      textOf(await again.callTool({ name: 'background_calls', arguments: { action: 'get', id: callId } })),
    ).toContain('interrupted by a gateway restart');
    // ...and through the webhook; a delivery that was still being retried when the gateway died is resumed.
    await waitFor('the resumed webhook', () =>
      receiver.deliveriesOf(doneId).some((post) => post.answered === 200) ? true : undefined,
    );
    expect(receiver.deliveriesOf(doneId).filter((post) => post.answered === 200)).toHaveLength(1);
    expect(verifiedBody(receiver.deliveriesOf(doneId).at(-1)!)).toMatchObject({ callId: doneId, status: 'ok' });
    // The resumed delivery goes on counting attempts from where the old gateway stopped.
    const failedAttempts = receiver.deliveriesOf(doneId).filter((post) => post.answered === 500).length;
    const delivered = await waitFor('the delivered state', async () => {
      const response = await fetch(`${baseUrl}/api/background?session=auto/restart`, {
        headers: { Authorization: `Bearer ${tokens.admin}` },
      });
      const { background } = (await response.json()) as { background: BackgroundCall[] };
      const done = background.find((call) => call.id === doneId);
      return done?.delivery.webhook.state === 'delivered' ? done : undefined;
    });
    expect(delivered.delivery.webhook.attempts).toBe(failedAttempts + 1);
    for (const id of [scriptId, callId]) {
      await waitFor(`the webhook for ${id}`, () => (receiver.deliveriesOf(id).length > 0 ? true : undefined));
      expect(receiver.deliveriesOf(id)).toHaveLength(1);
      expect(verifiedBody(receiver.deliveriesOf(id)[0]!)).toMatchObject({
        callId: id,
        status: 'interrupted',
        error: 'interrupted by a gateway restart',
      });
    }
  });
});

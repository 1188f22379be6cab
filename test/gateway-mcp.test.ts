import { Client, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFleet } from '../src/demo/fleet-data.js';
import { openSqliteStore, type Store } from '../src/store/store.js';
import type { Approval, CallRecord } from '../src/store/store-records.js';
import {
  baseConfig,
  connectClient,
  fleetService,
  startTestGateway,
  textOf,
  tokens,
  type TestGateway,
} from './harness.js';

// One MCP suite, run over every downstream transport: /mcp in both eras, and `toolgate stdio` in both eras.

const maxChars = 2000;
// No longTask override: the report runs inline (1 s, well under backgroundCalls.autoAfterSec) so its progress and
// cancellation go through the direct-call path.
const config = baseConfig({
  mcpServers: { fleet: fleetService({ FLEET_REPORT_SECONDS: '1' }) },
  tools: {},
  settings: { results: { maxChars } },
});
const healthy = generateFleet().filter((device) => !device.unanswering && device.status === 'online');
type ProfileName = 'ops' | 'auto';

interface Target {
  label: string;
  connect(profile: ProfileName): Promise<Client>;
  calls(tool: string): Promise<CallRecord[]>;
  /** The target gateway's SQLite store; a decision written there is how the CLI answers an approval. */
  store(): Store;
  dataDir(): string;
}

let gateway: TestGateway;
const scratch = mkdtempSync(join(tmpdir(), 'toolgate-mcp-'));
const configPath = join(scratch, 'toolgate.json');
writeFileSync(configPath, JSON.stringify(config));
const cleanups: Array<() => Promise<void>> = [];

function httpTarget(era: 'legacy' | 'modern'): Target {
  return {
    label: `HTTP /mcp, ${era} era`,
    async connect(profile) {
      const client = await connectClient(gateway.mcpUrl, tokens[profile], era);
      cleanups.push(() => client.close());
      return client;
    },
    async calls(tool) {
      return (await gateway.gateway.store.queryCalls({ tool })).rows;
    },
    store: () => gateway.gateway.store,
    dataDir: () => gateway.dataDir,
  };
}

/** `toolgate stdio` children: one per profile, started on first use, with their stderr kept for inspection. */
function stdioTarget(era: 'legacy' | 'modern'): Target & { stderr: string[]; errors: unknown[] } {
  const dataDir = join(scratch, `data-stdio-${era}`);
  const clients = new Map<ProfileName, Client>();
  const stderr: string[] = [];
  const errors: unknown[] = [];
  let store: Store | undefined;
  const openStore = (): Store => {
    if (store === undefined) {
      const opened = openSqliteStore(join(dataDir, 'toolgate.db'));
      cleanups.push(() => opened.close());
      store = opened;
    }
    return store;
  };
  return {
    label: `toolgate stdio, ${era} era`,
    stderr,
    errors,
    async connect(profile) {
      const existing = clients.get(profile);
      if (existing !== undefined) return existing;
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: ['dist/src/main.js', 'stdio', '--profile', profile, '--config', configPath, '--data-dir', dataDir],
        env: getDefaultEnvironment(),
        stderr: 'pipe',
      });
      transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
      const client = new Client(
        { name: `stdio-${era}`, version: '1.0.0' },
        era === 'modern' ? { versionNegotiation: { mode: 'auto' } } : {},
      );
      // A line on stdout that is not JSON-RPC surfaces here as a parse error.
      client.onerror = (error) => errors.push(error);
      await client.connect(transport);
      clients.set(profile, client);
      cleanups.push(() => client.close());
      return client;
    },
    async calls(tool) {
      return (await openStore().queryCalls({ tool })).rows;
    },
    store: openStore,
    dataDir: () => dataDir,
  };
}

const stdioTargets = [stdioTarget('legacy'), stdioTarget('modern')];
const targets: Target[] = [httpTarget('legacy'), httpTarget('modern'), ...stdioTargets];

beforeAll(async () => {
  gateway = await startTestGateway(config);
});

afterAll(async () => {
  await Promise.allSettled(cleanups.map((cleanup) => cleanup()));
  await gateway?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Finds a workspace-relative path in whichever session workspace holds it. */
function findInWorkspaces(dataDir: string, relativePath: string): string[] {
  const root = join(dataDir, 'workspaces');
  return readdirSync(root)
    .map((name) => join(root, name, relativePath))
    .filter((path) => existsSync(path));
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(50);
  }
}

/**
 * Starts a call that needs approval, waits until it is pending in the store, reads the device meanwhile, then
 * decides it through the store the way `toolgate approve|deny` does (the gateway polls for such decisions).
 */
async function withApproval(
  target: Target,
  client: Client,
  tool: string,
  args: { sn: string; label?: string },
  decision: 'deny' | 'allow_once',
): Promise<{ result: CallToolResult; approval: Approval; whilePending: unknown }> {
  const startedAt = Date.now();
  const call = client.callTool({ name: tool, arguments: args });
  const pending = await waitFor(
    () => target.store().listApprovals({ status: 'pending' }),
    (found) => found.some((approval) => approval.tools.includes(tool) && approval.createdAt >= startedAt - 1_000),
  );
  const approval = pending.find((candidate) => candidate.tools.includes(tool));
  if (approval === undefined) throw new Error(`no pending approval for ${tool}`);
  const status = await client.callTool({ name: 'fleet__get_device_status', arguments: { sn: args.sn } });
  const decided = await target
    .store()
    .decideApproval(approval.id, { decision, decidedBy: 'e2e test', channel: 'cli', at: Date.now() });
  expect(decided.ok).toBe(true);
  return { result: await call, approval, whilePending: status.structuredContent };
}

describe.each(targets.map((target, index) => ({ target, index, label: target.label })))(
  '$label',
  ({ target, index }) => {
    // Each target uses its own devices so label writes through one transport cannot satisfy another's checks.
    const device = healthy[index * 3];
    const otherDevice = healthy[index * 3 + 1];
    if (device === undefined || otherDevice === undefined) throw new Error('fixture devices missing');

    it('lists the fleet tools namespaced, plus read_workspace_file', async () => {
      const client = await target.connect('ops');
      const { tools } = await client.listTools();
      const names = tools.map((tool) => tool.name).sort();
      // Gateway built-ins (read_workspace_file, and run_script once it lands) carry no service prefix.
      expect(names.filter((name) => name.includes('__'))).toEqual([
        'fleet__export_fleet_report',
        'fleet__get_device_status',
        'fleet__list_devices',
        'fleet__reboot_device',
        'fleet__set_device_label',
      ]);
      expect(names).toContain('read_workspace_file');
      const list = tools.find((tool) => tool.name === 'fleet__list_devices');
      expect(list?.annotations?.readOnlyHint).toBe(true);
    });

    it('runs a read call with structured content', async () => {
      const client = await target.connect('ops');
      const result = await client.callTool({ name: 'fleet__get_device_status', arguments: { sn: device.sn } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ sn: device.sn, site: device.site, status: 'online' });
      expect(JSON.parse(textOf(result))).toMatchObject({ sn: device.sn, model: device.model });
    });

    it('forwards upstream progress to the client', async () => {
      const client = await target.connect('ops');
      const seen: Array<{ progress: number; total?: number | undefined; message?: string | undefined }> = [];
      const result = await client.callTool(
        { name: 'fleet__export_fleet_report', arguments: {} },
        { onprogress: (progress) => seen.push(progress) },
      );
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ total: 500 });
      expect(seen.length).toBeGreaterThanOrEqual(10);
      // The gateway writes every notification before the result (checked on the wire), but the SDK's 2026-era HTTP
      // client can drop one that arrives in the same chunk as the result, so the very last one is not required.
      expect(seen.at(-1)?.progress).toBeGreaterThanOrEqual(480);
      expect(seen.at(-1)?.total).toBe(500);
      expect(seen[0]?.message).toMatch(/^scanned \d+\/500 devices/);
      const progresses = seen.map((item) => item.progress);
      expect(progresses).toEqual([...progresses].sort((a, b) => a - b));
    });

    it('cancels the upstream call when the client cancels, and records it as cancelled', async () => {
      const client = await target.connect('ops');
      const controller = new AbortController();
      const startedAt = Date.now();
      const call = client.callTool(
        { name: 'fleet__export_fleet_report', arguments: {} },
        { signal: controller.signal, onprogress: () => controller.abort('test cancels') },
      );
      await expect(call).rejects.toThrow();
      const rows = await waitFor(
        async () => (await target.calls('fleet__export_fleet_report')).filter((row) => row.startedAt >= startedAt),
        (found) => found.length > 0 && found.every((row) => row.status !== 'running'),
      );
      expect(rows.map((row) => row.status)).toEqual(['cancelled']);
      // The report takes 1 s upstream; a cancelled call ends well before that.
      expect(rows[0]?.durationMs ?? Infinity).toBeLessThan(800);
      // The service is still usable afterwards.
      const after = await client.callTool({ name: 'fleet__get_device_status', arguments: { sn: device.sn } });
      expect(after.structuredContent).toMatchObject({ sn: device.sn });
    });

    it('asks a person before a write or destructive call in approve mode, and runs a write in auto mode', async () => {
      const ops = await target.connect('ops');
      // Deny the write: it waits for a decision, never runs on its own, and is refused once denied.
      const denied = await withApproval(
        target,
        ops,
        'fleet__set_device_label',
        { sn: device.sn, label: 'denied' },
        'deny',
      );
      expect(denied.result.isError).toBe(true);
      expect(textOf(denied.result)).toBe('call to fleet__set_device_label denied by e2e test (cli)');
      expect(denied.whilePending).toMatchObject({ label: null });
      const status = await ops.callTool({ name: 'fleet__get_device_status', arguments: { sn: device.sn } });
      expect(status.structuredContent).toMatchObject({ label: null, rebooting: false });
      // Allow the destructive call once: it runs then, and only then.
      const allowed = await withApproval(target, ops, 'fleet__reboot_device', { sn: device.sn }, 'allow_once');
      expect(allowed.approval.options).toEqual(['allow_once', 'deny']);
      expect(allowed.whilePending).toMatchObject({ rebooting: false });
      expect(allowed.result.isError).toBeFalsy();
      expect(allowed.result.structuredContent).toMatchObject({ sn: device.sn, rebooted: true });

      const auto = await target.connect('auto');
      const written = await auto.callTool({
        name: 'fleet__set_device_label',
        arguments: { sn: otherDevice.sn, label: `set via ${target.label}` },
      });
      expect(written.isError).toBeFalsy();
      expect(written.structuredContent).toEqual({
        sn: otherDevice.sn,
        label: `set via ${target.label}`,
        previous: null,
      });
      const check = await auto.callTool({ name: 'fleet__get_device_status', arguments: { sn: otherDevice.sn } });
      expect(check.structuredContent).toMatchObject({ label: `set via ${target.label}` });
    });

    it('cuts a large result, saves it in the workspace, and serves it by tool and as a resource', async () => {
      const client = await target.connect('ops');
      const result = await client.callTool({ name: 'fleet__list_devices', arguments: { pageSize: 500 } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toBeUndefined();
      const text = textOf(result);
      expect(text).toContain(`result cut at ${maxChars} of`);
      expect(text.length).toBeLessThan(maxChars + 400);
      const path = /(\.agent\/results\/[A-Za-z0-9_.-]+\.json)/.exec(text)?.[1];
      expect(path).toBeDefined();
      if (path === undefined) return;

      const files = findInWorkspaces(target.dataDir(), path);
      expect(files).toHaveLength(1);
      const full = readFileSync(files[0] ?? '', 'utf8');
      const saved = JSON.parse(full) as { text: string; structured: { devices: unknown[]; total: number } };
      expect(saved.structured.devices).toHaveLength(500);
      expect(saved.text.length).toBeGreaterThan(maxChars);
      expect(text.startsWith(saved.text.slice(0, maxChars))).toBe(true);

      const head = await client.callTool({ name: 'read_workspace_file', arguments: { path, offset: 0, length: 1000 } });
      expect(head.isError).toBeFalsy();
      expect(head.structuredContent).toEqual({ path, offset: 0, size: Buffer.byteLength(full), eof: false });
      expect(textOf(head).startsWith(full.slice(0, 1000))).toBe(true);
      expect(textOf(head)).toContain('more follows — call again with offset 1000');
      const tailOffset = Buffer.byteLength(full) - 100;
      const tail = await client.callTool({
        name: 'read_workspace_file',
        arguments: { path, offset: tailOffset, length: 1000 },
      });
      expect(tail.structuredContent).toMatchObject({ offset: tailOffset, eof: true });
      expect(textOf(tail).startsWith(full.slice(-100))).toBe(true);

      const { resources } = await client.listResources(undefined, { cacheMode: 'bypass' });
      const resource = resources.find((item) => item.name === path);
      expect(resource?.uri).toBe(`workspace:///${path}`);
      const read = await client.readResource({ uri: `workspace:///${path}` }, { cacheMode: 'bypass' });
      expect(read.contents[0]).toMatchObject({ uri: `workspace:///${path}`, mimeType: 'application/json', text: full });
    });
  },
);

describe('toolgate stdio, after the suite', () => {
  it.each(stdioTargets.map((target) => ({ target, label: target.label })))(
    '$label kept stdout for protocol only and sent logs to stderr',
    ({ target }) => {
      expect(target.errors).toEqual([]);
      const log = target.stderr.join('');
      expect(log).toContain('service fleet is up');
      // The fleet child's own stderr reaches the gateway log, tagged with the service name.
      expect(log).toMatch(/toolgate\[service:fleet\] fleet: serving 500 devices/);
    },
  );
});

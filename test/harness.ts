import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveCliContext } from '../src/cli/cli-context.js';
import { startServer, type RunningServer } from '../src/cli/serve-command.js';
import { fleetServerPath } from '../src/config/default-config.js';
import { createLogger } from '../src/log/logger.js';

export const tokens = {
  ops: 'ops-token-0123456789abcdef',
  readonly: 'readonly-token-0123456789abcdef',
  auto: 'auto-token-0123456789abcdef',
  admin: 'admin-token-0123456789abcdef',
};

/** The demo fleet as a stdio service, as the built gateway runs it (tests need `npm run build` first). */
export function fleetService(env: Record<string, string> = {}): {
  command: string;
  args: string[];
  env: Record<string, string>;
} {
  return { command: process.execPath, args: [fleetServerPath()], env: { FLEET_REPORT_SECONDS: '2', ...env } };
}

export function baseConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    listen: { host: '127.0.0.1', port: 0 },
    adminToken: tokens.admin,
    mcpServers: { fleet: fleetService() },
    tools: { fleet__export_fleet_report: { longTask: true } },
    profiles: {
      ops: { services: ['fleet'], mode: 'approve', tokens: [tokens.ops] },
      auto: { services: ['fleet'], mode: 'auto', tokens: [tokens.auto] },
      readonly: { services: ['fleet'], mode: 'auto', readOnly: true, tokens: [tokens.readonly] },
    },
    ...overrides,
  };
}

export interface TestGateway extends RunningServer {
  dataDir: string;
  mcpUrl: string;
  logs: string[];
}

/** A real gateway in this process on a free port, with its own data dir and config file. */
export async function startTestGateway(config: Record<string, unknown> = baseConfig()): Promise<TestGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-test-'));
  const configPath = join(dir, 'toolgate.json');
  writeFileSync(configPath, JSON.stringify(config));
  const context = resolveCliContext({ config: configPath, dataDir: join(dir, 'data') }, process.env, dir);
  const logs: string[] = [];
  const running = await startServer(context, createLogger({ write: (line) => logs.push(line) }), () => undefined);
  return {
    ...running,
    dataDir: context.dataDir,
    mcpUrl: `${running.url}/mcp`,
    logs,
    async close() {
      await running.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type Era = 'legacy' | 'modern';

/** An SDK v2 client of the given era, with a bearer token (and optionally a named session). */
export async function connectClient(
  url: string,
  token: string,
  era: Era,
  options: { session?: string; capabilities?: Record<string, unknown> } = {},
): Promise<Client> {
  const client = new Client(
    { name: `test-${era}`, version: '1.0.0' },
    { versionNegotiation: { mode: era === 'modern' ? 'auto' : 'legacy' }, capabilities: options.capabilities ?? {} },
  );
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (options.session !== undefined) headers['X-Toolgate-Session'] = options.session;
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

export function textOf(result: { content?: unknown }): string {
  const content = (result.content ?? []) as Array<{ type: string; text?: string }>;
  return content.map((block) => block.text ?? '').join('\n');
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI (`dist/src/main.js`) as a child process and collects everything it printed. */
export function runCli(args: string[], environment: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['dist/src/main.js', ...args], {
      env: { PATH: process.env.PATH ?? '', ...environment },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { resolveCliContext } from '../src/cli/cli-context.js';
import { startServer } from '../src/cli/serve-command.js';
import { fleetServerPath, packageRoot } from '../src/config/default-config.js';
import { createLogger } from '../src/log/logger.js';
import { workspaceDirName } from '../src/sessions/workspace.js';

// The gateway under measurement: real, on a free port, with a temp data dir and the demo fleet as its service.

export const BENCH_TOKEN = 'bench-token-0123456789abcdef';
const BENCH_PROFILE = 'bench';
const ADMIN_TOKEN = 'bench-admin-0123456789abcdef';

/** `FLEET_*` variables of the demo service (see src/demo/fleet-options.ts). */
export interface FleetEnv {
  latencyMs?: number;
  noErrors?: boolean;
}

function fleetEnvironment(fleet: FleetEnv): Record<string, string> {
  const env: Record<string, string> = {};
  if (fleet.latencyMs !== undefined) env.FLEET_FIXED_LATENCY_MS = String(fleet.latencyMs);
  if (fleet.noErrors === true) env.FLEET_NO_ERRORS = '1';
  return env;
}

/** One profile in `auto` mode, so nothing waits for a person. */
function benchConfig(fleet: FleetEnv): Record<string, unknown> {
  return {
    listen: { host: '127.0.0.1', port: 0 },
    adminToken: ADMIN_TOKEN,
    mcpServers: { fleet: { command: process.execPath, args: [fleetServerPath()], env: fleetEnvironment(fleet) } },
    tools: { fleet__export_fleet_report: { longTask: true } },
    profiles: { [BENCH_PROFILE]: { services: ['fleet'], mode: 'auto', tokens: [BENCH_TOKEN] } },
  };
}

export interface BenchGateway {
  url: string;
  dataDir: string;
  /** Present for an in-process gateway; a child's pid is in `pid`. */
  pid: number;
  /** A child's state and the end of its stderr, for an error message. */
  diagnostics?: () => string;
  close(): Promise<void>;
}

function writeConfig(fleet: FleetEnv): { dir: string; configPath: string; dataDir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-bench-'));
  const configPath = join(dir, 'toolgate.json');
  writeFileSync(configPath, JSON.stringify(benchConfig(fleet)));
  return { dir, configPath, dataDir: join(dir, 'data') };
}

/** A real gateway inside this process (its logs are dropped: they would only add noise). */
export async function startInProcessGateway(fleet: FleetEnv = {}): Promise<BenchGateway> {
  const { dir, configPath, dataDir } = writeConfig(fleet);
  const context = resolveCliContext({ config: configPath, dataDir }, process.env, dir);
  const running = await startServer(context, createLogger({ write: () => undefined }), () => undefined);
  return {
    url: running.url,
    dataDir: context.dataDir,
    pid: process.pid,
    async close() {
      await running.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `toolgate serve` as a child process, so that its memory and event loop are its own. */
export async function startChildGateway(fleet: FleetEnv = {}): Promise<BenchGateway> {
  const { dir, configPath, dataDir } = writeConfig(fleet);
  const main = join(packageRoot(), 'dist', 'src', 'main.js');
  // For profiling a run by hand, e.g. TOOLGATE_BENCH_NODE_ARGS=--cpu-prof (the profile lands in the cwd).
  const nodeArgs = (process.env.TOOLGATE_BENCH_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
  const args = [...nodeArgs, main, 'serve', '--config', configPath, '--data-dir', dataDir];
  const child: ChildProcess = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderrTail = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderrTail = (stderrTail + chunk.toString()).slice(-4000)));
  let exit = '';
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = `exited with ${signal ?? String(code)}`;
      resolve();
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the child gateway did not start within 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`the child gateway exited (${String(code)}) before serving`)));
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const found = /MCP endpoint\s+(http:\/\/\S+)\/mcp/.exec(line);
      if (found?.[1] === undefined) return;
      clearTimeout(timer);
      resolve(found[1]);
    });
  });
  return {
    url,
    dataDir,
    pid: child.pid!,
    diagnostics: () => `${exit === '' ? 'running' : exit}; stderr ends: ${stderrTail.slice(-1500)}`,
    async close() {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An SDK v2 client of the gateway, optionally naming its session with `X-Toolgate-Session`. */
export async function connectGateway(gateway: BenchGateway, session?: string): Promise<Client> {
  const client = new Client({ name: 'toolgate-bench', version: '1.0.0' });
  const headers: Record<string, string> = { Authorization: `Bearer ${BENCH_TOKEN}` };
  if (session !== undefined) headers['X-Toolgate-Session'] = session;
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers } }));
  return client;
}

/** An SDK client of the fleet service itself over stdio, not through toolgate: the baseline for call overhead. */
export async function connectFleetDirectly(fleet: FleetEnv): Promise<Client> {
  const client = new Client({ name: 'toolgate-bench-direct', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [fleetServerPath()],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...fleetEnvironment(fleet) },
      stderr: 'ignore',
    }),
  );
  return client;
}

export function textOf(result: { content?: unknown }): string {
  const content = (result.content ?? []) as { type: string; text?: string }[];
  return content.map((block) => block.text ?? '').join('\n');
}

export interface ScriptReply {
  text: string;
  isError: boolean;
  calls: number;
  failures: number;
  /** What the script printed (the reply without its summary line). */
  output: string;
  /** `.agent/scripts/<id>/`, relative to the session's workspace. */
  detailsDir: string;
}

const SUMMARY_LINE =
  /^run_script (ok|failed|timed out|cancelled) · ([\d,]+) calls \(([\d,]+) failed\) · [\d.]+ s · details: (\S+)$/;

/** Calls run_script and reads its summary line; throws when the reply is not a summary at all. */
export async function runScriptTool(client: Client, code: string, description = 'benchmark'): Promise<ScriptReply> {
  const result = await client.callTool(
    { name: 'run_script', arguments: { code, tools: [], description } },
    { timeout: 600_000 },
  );
  const text = textOf(result);
  const [first = '', ...rest] = text.split('\n');
  const summary = SUMMARY_LINE.exec(first);
  if (summary === null) throw new Error(`run_script replied without a summary line: ${text.slice(0, 500)}`);
  return {
    text,
    isError: result.isError === true,
    calls: Number(summary[2]!.replaceAll(',', '')),
    failures: Number(summary[3]!.replaceAll(',', '')),
    output: rest.join('\n'),
    detailsDir: summary[4]!,
  };
}

/** The last number a script printed, e.g. its own timing; throws with the reply when there is none. */
export function lastNumberOf(reply: ScriptReply): number {
  const found = /(-?\d+(?:\.\d+)?(?:e-?\d+)?)\s*$/.exec(reply.output.trim());
  if (found?.[1] === undefined) throw new Error(`the script printed no number: ${reply.text.slice(0, 500)}`);
  return Number(found[1]);
}

/** `durationMs` of every line of a script's calls.jsonl: the gateway's side of each call (pipeline + service). */
export async function callDurationsOf(gateway: BenchGateway, session: string, reply: ScriptReply): Promise<number[]> {
  const path = join(
    gateway.dataDir,
    'workspaces',
    workspaceDirName(`${BENCH_PROFILE}/${session}`),
    reply.detailsDir,
    'calls.jsonl',
  );
  const lines = (await readFile(path, 'utf8')).split('\n').filter((line) => line !== '');
  return lines.map((line) => (JSON.parse(line) as { durationMs: number }).durationMs);
}

/** Resident memory of a process in MB, from /proc (VmRSS). */
export async function residentMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kb) / 1024;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

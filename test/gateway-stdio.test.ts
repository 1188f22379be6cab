import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { generateFleet } from '../src/demo/fleet-data.js';
import { baseConfig } from './harness.js';

// `toolgate stdio` spoken to by hand: every byte on stdout is a JSON-RPC message, every log line is on stderr.

const dir = mkdtempSync(join(tmpdir(), 'toolgate-stdio-'));
const configPath = join(dir, 'toolgate.json');
writeFileSync(configPath, JSON.stringify(baseConfig()));
const device = generateFleet().find((candidate) => !candidate.unanswering);
if (device === undefined) throw new Error('fixture device missing');
const children: ChildProcessWithoutNullStreams[] = [];

function startStdio(profile: string): ChildProcessWithoutNullStreams {
  const child = spawn(
    process.execPath,
    ['dist/src/main.js', 'stdio', '--profile', profile, '--config', configPath, '--data-dir', join(dir, 'data')],
    { env: { PATH: process.env.PATH ?? '' } },
  );
  children.push(child);
  return child;
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('toolgate stdio', () => {
  it('writes only JSON-RPC to stdout, logs to stderr, and exits when stdin ends', async () => {
    const child = startStdio('ops');
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const lines: string[] = [];
    const waiting = new Map<number, (message: Record<string, unknown>) => void>();
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      try {
        const message = JSON.parse(line) as Record<string, unknown>;
        if (typeof message.id === 'number') waiting.get(message.id)?.(message);
      } catch {
        // Kept in `lines`; the assertion below reports it.
      }
    });
    const request = (id: number, method: string, params: Record<string, unknown>) =>
      new Promise<Record<string, unknown>>((resolve) => {
        waiting.set(id, resolve);
        child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
      });

    const initialized = await request(1, 'initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'by-hand', version: '1' },
    });
    expect(initialized.result).toMatchObject({ protocolVersion: '2025-11-25', serverInfo: { name: 'toolgate' } });
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    const listed = (await request(2, 'tools/list', {})) as { result: { tools: Array<{ name: string }> } };
    expect(listed.result.tools.map((tool) => tool.name)).toContain('fleet__get_device_status');
    const called = (await request(3, 'tools/call', {
      name: 'fleet__get_device_status',
      arguments: { sn: device.sn },
    })) as { result: { structuredContent: { sn: string } } };
    expect(called.result.structuredContent.sn).toBe(device.sn);
    const unknown = (await request(4, 'tools/call', { name: 'nope__tool', arguments: {} })) as {
      result: { isError: boolean; content: Array<{ text: string }> };
    };
    expect(unknown.result).toMatchObject({ isError: true, content: [{ text: 'unknown tool nope__tool' }] });

    child.stdin.end();
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect(lines.length).toBeGreaterThanOrEqual(4);
    for (const line of lines) {
      let message: { jsonrpc?: unknown } | undefined;
      expect(
        () => (message = JSON.parse(line) as { jsonrpc?: unknown }),
        `not JSON: ${line.slice(0, 200)}`,
      ).not.toThrow();
      expect(message?.jsonrpc).toBe('2.0');
    }
    expect(stderr).toContain('service fleet is up');
    expect(stderr).toContain('toolgate[service:fleet] fleet: serving 500 devices');
  });

  it('refuses an unknown profile on stderr, naming the ones there are', async () => {
    const child = startStdio('nosuch');
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).not.toBe(0);
    expect(stdout).toBe('');
    expect(stderr).toContain('no profile named "nosuch" (profiles: ops, auto, readonly)');
  });
});

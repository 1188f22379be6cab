import type { Client } from '@modelcontextprotocol/client';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayEvent } from '../src/events/event-bus.js';
import { workspaceDirName } from '../src/sessions/workspace.js';
import { baseConfig, connectClient, startTestGateway, textOf, tokens, type Era, type TestGateway } from './harness.js';
import {
  auditOf,
  readRecord,
  runScript,
  scriptTree,
  sleep,
  stillAlive,
  summaryLine,
  waitFor,
  workspaceOf,
  type ProgressUpdate,
} from './run-script-support.js';

// run_script through the gateway: limits (calls, timeout, client cancel) with the whole process tree ended,
// progress to the client and the event bus, failures, long output, and isolation between sessions.

let gateway: TestGateway;
/** A gateway with small script limits: 20 calls, 2 s. */
let limited: TestGateway;
const clients: Client[] = [];

beforeAll(async () => {
  [gateway, limited] = await Promise.all([
    // A profile without tokens makes the gateway generate one into <dataDir>/secrets.json.
    startTestGateway(
      baseConfig({
        profiles: {
          ops: { services: ['fleet'], mode: 'approve', tokens: [tokens.ops] },
          tokenless: { services: ['fleet'] },
        },
      }),
    ),
    startTestGateway(baseConfig({ settings: { scripts: { maxCalls: 20, timeoutSec: 2 } } })),
  ]);
});

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await Promise.allSettled([gateway?.close(), limited?.close()]);
});

async function connect(on: TestGateway, era: Era, session: string): Promise<Client> {
  const client = await connectClient(on.mcpUrl, tokens.ops, era, { session });
  clients.push(client);
  return client;
}

/** A script that starts a setsid child ignoring SIGTERM (marked by `marker`) and then sleeps. */
function sleeperScript(marker: string): string {
  return `
import subprocess, sys, time
child = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
subprocess.Popen([sys.executable, "-c", child, "${marker}"], start_new_session=True)
print("sleeping", flush=True)
time.sleep(300)
`;
}

async function scriptRecord(on: TestGateway, sessionId: string) {
  return (await auditOf(on, sessionId)).find((row) => row.kind === 'script');
}

describe('limits through the gateway (settings.scripts)', () => {
  it('maxCalls 20: the 21st call raises ToolError limit', async () => {
    const client = await connect(limited, 'legacy', 'max-calls');
    const code = `
from agent_tools import call, ToolError
done = 0
for i in range(25):
    try:
        call("fleet__list_devices", {"pageSize": 1})
        done += 1
    except ToolError as e:
        print("call", i + 1, "|", e.code, "|", e.message)
        break
print("done", done)
`;
    const result = await runScript(client, code);
    expect(result.isError, result.text).toBe(false);
    const printed = result.text.split('\n').slice(1);
    expect(printed[0]).toMatch(/^call 21 \| limit \| .*maximum number of tool calls/);
    expect(printed[1]).toBe('done 20');
    // The refused 21st call is recorded as a failed call; no 22nd was attempted.
    expect(result.summary).toMatchObject({ calls: 21, failures: 1, callsPerTool: { fleet__list_devices: 21 } });
    const lines = (await readRecord(limited, 'ops/max-calls', result.summary!.detailsDir, 'calls.jsonl')).trimEnd();
    expect(JSON.parse(lines.split('\n').at(-1)!)).toMatchObject({ isError: true, errorCode: 'limit' });
  });

  it('timeoutSec 2: the script ends as timed out and its whole process tree is gone', async () => {
    const client = await connect(limited, 'modern', 'timeout');
    const marker = `tg-timeout-${randomBytes(6).toString('hex')}`;
    const startedAt = Date.now();
    const running = runScript(client, sleeperScript(marker));
    const tree = await waitFor(async () => {
      const pids = await scriptTree(marker);
      return pids.length >= 2 ? pids : undefined;
    }, 1900);
    const result = await running;
    const elapsed = Date.now() - startedAt;
    expect(result.isError).toBe(true);
    expect(result.firstLine).toMatch(/^run_script timed out · 0 calls \(0 failed\) · \d\.\d s · details: /);
    expect(result.text).toContain('sleeping');
    expect(result.summary).toMatchObject({ status: 'timed out', killedReason: 'timed out after 2 s' });
    expect(elapsed).toBeGreaterThanOrEqual(2000);
    expect(elapsed).toBeLessThan(4500);
    expect(await stillAlive(tree)).toEqual([]);
    expect(await scriptTree(marker)).toEqual([]);
    expect((await scriptRecord(limited, 'ops/timeout'))?.status).toBe('timeout');
  });
});

describe('two gateways on one host', () => {
  // Two gateways on one host lease sandbox uids host-wide, so one's cleanup never ends the other's script.
  it("do not end each other's scripts", async () => {
    const first = await connect(gateway, 'modern', 'shared-uid');
    const second = await connect(limited, 'modern', 'shared-uid');
    const long = runScript(first, 'import time\ntime.sleep(3)\nprint("survived")');
    await sleep(800);
    const short = await runScript(second, 'print(1)');
    expect(short.summary?.durationMs).toBeLessThan(1000);
    const result = await long;
    expect(result.summary).toMatchObject({ status: 'ok', exitCode: 0 });
    expect(result.text).toContain('survived');
  });
});

describe.each(['legacy', 'modern'] as const)('cancellation by the client (%s era)', (era) => {
  it('ends the script and its process tree within 2 s; the audit says cancelled', async () => {
    const client = await connect(gateway, era, `cancel-${era}`);
    const marker = `tg-cancel-${randomBytes(6).toString('hex')}`;
    const controller = new AbortController();
    const running = runScript(client, sleeperScript(marker), [], { signal: controller.signal });
    running.catch(() => undefined);
    const tree = await waitFor(async () => {
      const pids = await scriptTree(marker);
      return pids.length >= 2 ? pids : undefined;
    }, 5000);
    controller.abort();
    const abortedAt = Date.now();
    await expect(running).rejects.toThrow();
    await waitFor(async () => ((await stillAlive(tree)).length === 0 ? true : undefined), 2000);
    expect(Date.now() - abortedAt).toBeLessThan(2000);
    expect(await scriptTree(marker)).toEqual([]);
    const record = await waitFor(async () => {
      const row = await scriptRecord(gateway, `ops/cancel-${era}`);
      return row?.status === 'running' ? undefined : row;
    }, 3000);
    expect(record.status).toBe('cancelled');
  });
});

describe('progress', () => {
  it('reaches the client as MCP progress and the event bus at most once a second', async () => {
    const client = await connect(gateway, 'modern', 'progress');
    const events: { at: number; event: Extract<GatewayEvent, { type: 'script.progress' }> }[] = [];
    const unsubscribe = gateway.gateway.events.subscribe((event) => {
      if (event.type === 'script.progress' && event.sessionId === 'ops/progress') {
        events.push({ at: Date.now(), event });
      }
    });
    const notifications: ProgressUpdate[] = [];
    const code = `
import time
from agent_tools import call, progress
for i in range(1, 6):
    call("fleet__get_device_status", {"sn": "FL-000001"})
    progress(i, 5, f"step {i} of 5")
    time.sleep(0.6)
print("done")
`;
    const result = await runScript(client, code, [], { onprogress: (progress) => notifications.push(progress) });
    unsubscribe();
    expect(result.isError, result.text).toBe(false);

    expect(notifications.length).toBeGreaterThanOrEqual(2);
    expect(notifications.some((n) => n.total === 5 && /step [1-5] of 5/.test(n.message ?? ''))).toBe(true);
    const values = notifications.map((n) => n.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));

    expect(events.length).toBeGreaterThanOrEqual(3);
    const scriptId = result.summary!.detailsDir.split('/')[2];
    for (const { event } of events) expect(event.scriptId).toBe(scriptId);
    const running = events.filter(({ event }) => event.status === 'running');
    for (let index = 1; index < running.length; index++) {
      expect(running[index]!.at - running[index - 1]!.at).toBeGreaterThanOrEqual(950);
    }
    expect(running.some(({ event }) => event.total === 5 && /^step [1-5] of 5$/.test(event.message ?? ''))).toBe(true);
    expect(events.at(-1)?.event).toMatchObject({ status: 'ok', calls: 5, failures: 0, done: 5, total: 5 });
  });
});

describe('what comes back', () => {
  it('a failing script: run_script failed, the end of the traceback, isError and the exit code', async () => {
    const client = await connect(gateway, 'legacy', 'failing');
    const code = 'print("before the failure")\ndef inner():\n    raise ValueError("boom 8a1f")\ninner()\n';
    const result = await runScript(client, code);
    expect(result.isError).toBe(true);
    expect(summaryLine.exec(result.firstLine)?.[1]).toBe('failed');
    expect(result.text).toContain('before the failure');
    expect(result.text).toMatch(/Traceback \(most recent call last\):[\s\S]*in inner[\s\S]*ValueError: boom 8a1f$/);
    expect(result.summary).toMatchObject({ status: 'failed', exitCode: 1 });
    expect((await scriptRecord(gateway, 'ops/failing'))?.script).toMatchObject({ exitCode: 1 });
  });

  it('output over 20,000 characters is cut, naming the full output.txt, which holds everything', async () => {
    const client = await connect(gateway, 'modern', 'long-output');
    const code = 'for i in range(3000):\n    print(f"line {i:05d} " + "x" * 20)\nprint("THE END")\n';
    const full = `${Array.from({ length: 3000 }, (_, i) => `line ${String(i).padStart(5, '0')} ${'x'.repeat(20)}`).join('\n')}\nTHE END\n`;
    const result = await runScript(client, code);
    expect(result.isError, result.firstLine).toBe(false);
    const { detailsDir } = result.summary!;
    expect(result.summary).toMatchObject({ outputTruncated: true, outputChars: full.length });
    expect(result.text).not.toContain('THE END');
    expect(result.text).toContain(
      `[output cut at 20,000 of ${full.length.toLocaleString('en-US')} characters; full output: ${detailsDir}output.txt]`,
    );
    expect(result.text).toContain(full.slice(0, 20_000));
    expect(await readRecord(gateway, 'ops/long-output', detailsDir, 'output.txt')).toBe(full);
    const tail = await client.callTool({
      name: 'read_workspace_file',
      arguments: { path: `${detailsDir}output.txt`, offset: full.length - 8 },
    });
    expect(textOf(tail).startsWith('THE END\n')).toBe(true);
  });
});

describe('isolation through the gateway', () => {
  it("a script cannot read another session's workspace, the config, the database or secrets", async () => {
    const secret = `secret-${randomBytes(8).toString('hex')}`;
    const writer = await connect(gateway, 'legacy', 'iso-b');
    const wrote = await runScript(writer, `open("secret-b.txt", "w").write("${secret}")\nprint("written")`);
    expect(wrote.isError, wrote.text).toBe(false);
    const otherDir = workspaceDirName('ops/iso-b');
    expect(readFileSync(join(workspaceOf(gateway, 'ops/iso-b'), 'secret-b.txt'), 'utf8')).toBe(secret);

    const configPath = join(dirname(gateway.dataDir), 'toolgate.json');
    const targets = [
      join(workspaceOf(gateway, 'ops/iso-b'), 'secret-b.txt'),
      `../${otherDir}/secret-b.txt`,
      `../../workspaces/${otherDir}/secret-b.txt`,
      `../../../${otherDir}/secret-b.txt`,
      configPath,
      join(gateway.dataDir, 'toolgate.db'),
      join(gateway.dataDir, 'secrets.json'),
    ];
    for (const target of [targets[0]!, ...targets.slice(4)]) expect(existsSync(target), target).toBe(true);
    expect(readFileSync(configPath, 'utf8')).toContain(tokens.admin);
    const generated = (JSON.parse(readFileSync(targets[6]!, 'utf8')) as { profileTokens: { tokenless: string } })
      .profileTokens.tokenless;
    expect(generated).toMatch(/^tgp_/);

    const port = new URL(gateway.url).port;
    const code = `
import os, socket
for path in ${JSON.stringify(targets)}:
    try:
        print("read", path, "| OK", open(path, "rb").read()[:200])
    except OSError as e:
        print("read", path, "| blocked", type(e).__name__)
print("parent holds", sorted(os.listdir("..")))
for host, port in [("127.0.0.1", ${port}), ("1.1.1.1", 53)]:
    try:
        socket.create_connection((host, port), timeout=2)
        print("net", host, "| OK")
    except OSError as e:
        print("net", host, "| blocked", type(e).__name__)
try:
    socket.getaddrinfo("example.com", 80)
    print("dns | OK")
except OSError as e:
    print("dns | blocked", type(e).__name__)
`;
    const reader = await connect(gateway, 'modern', 'iso-a');
    const result = await runScript(reader, code);
    expect(result.isError, result.text).toBe(false);
    const printed = result.text.split('\n').slice(1);
    const reads = printed.filter((line) => line.startsWith('read '));
    expect(reads).toHaveLength(targets.length);
    for (const line of reads) expect(line).toMatch(/\| blocked (FileNotFoundError|PermissionError|OSError)$/);
    expect(printed.find((line) => line.startsWith('parent holds'))).not.toContain(otherDir);
    expect(printed.filter((line) => /^(net|dns) /.test(line))).toEqual([
      expect.stringMatching(/^net 127\.0\.0\.1 \| blocked /),
      expect.stringMatching(/^net 1\.1\.1\.1 \| blocked /),
      expect.stringMatching(/^dns \| blocked /),
    ]);
    expect(result.text).not.toContain(secret);
    expect(result.text).not.toContain(tokens.admin);
    expect(result.text).not.toContain(generated);
  });
});

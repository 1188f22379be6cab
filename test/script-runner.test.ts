import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GatewayError, isGatewayError } from '../src/errors/gateway-error.js';
import type { PythonRuntime } from '../src/sandbox/bwrap-argv.js';
import { resolvePythonRuntime } from '../src/sandbox/python-runtime.js';
import { SandboxUidPool } from '../src/sandbox/sandbox-uid-pool.js';
import { listUidProcesses } from '../src/sandbox/uid-processes.js';
import type { CallTool, CallToolResult } from '../src/script/script-bridge.js';
import { buildScriptReply } from '../src/script/script-reply.js';
import {
  runScript,
  type RunScriptOptions,
  type ScriptLimits,
  type ScriptOutcome,
  type ScriptProgress,
} from '../src/script/script-runner.js';
import { writeScriptRuntime } from '../src/script/script-runtime.js';

// The run_script engine end to end: real bubblewrap, real Python, a hand-written fake fleet as the gateway pipeline.

const limits: ScriptLimits = {
  maxCalls: 2000,
  concurrency: 4,
  timeoutSec: 60,
  memoryMb: 1024,
  maxProcesses: 64,
  maxFileSizeMb: 64,
  maxOpenFiles: 256,
  maxWorkspaceMb: 2048,
  maxOutputMb: 2048,
  maxLineKb: 1024,
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A fake `fleet` service behind the pipeline: records calls and how many ran at once. */
class FakeFleet {
  readonly calls: { tool: string; args: Record<string, unknown> }[] = [];
  /** Arguments in the order the calls finished. */
  readonly completed: Record<string, unknown>[] = [];
  inFlight = 0;
  maxInFlight = 0;
  defaultDelayMs = 1;
  /** Runs when a `probe__*` tool is called, before it returns. */
  onProbe: (tool: string) => Promise<void> = () => Promise.resolve();

  readonly callTool: CallTool = async (tool, args) => {
    this.calls.push({ tool, args });
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await sleep(typeof args.delayMs === 'number' ? args.delayMs : this.defaultDelayMs);
      return await this.#answer(tool, args);
    } finally {
      this.inFlight -= 1;
      this.completed.push(args);
    }
  };

  async #answer(tool: string, args: Record<string, unknown>): Promise<CallToolResult> {
    if (tool.startsWith('probe__')) {
      await this.onProbe(tool);
      return { text: 'probed', isError: false };
    }
    switch (tool) {
      case 'fleet__get_device_status': {
        const sn = String(args.sn);
        if (sn.startsWith('BAD')) return { text: `device ${sn} is offline`, isError: true };
        if (sn === 'DENIED') throw new GatewayError('not_allowed', 'fleet__reboot is a write tool not listed in tools');
        return { text: JSON.stringify({ sn, status: 'online' }), structured: { sn, status: 'online' }, isError: false };
      }
      case 'fleet__plain_text':
        return { text: 'just text', isError: false };
      case 'fleet__json_text':
        return { text: ' [1, 2, {"a": 3}] ', isError: false };
      default:
        throw new GatewayError('unknown_tool', `no tool ${tool}`);
    }
  }
}

let python: PythonRuntime;
let dataDir: string;
let runtimeDir: string;
let nextSlot = 0;

beforeAll(async () => {
  python = await resolvePythonRuntime();
  dataDir = await mkdtemp(join(tmpdir(), 'toolgate-runner-test-'));
  runtimeDir = await writeScriptRuntime(dataDir);
});

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

async function newWorkspace(): Promise<string> {
  const dir = await mkdtemp(join(dataDir, 'ws-'));
  await chmod(dir, 0o777);
  return dir;
}

interface Run {
  outcome: ScriptOutcome;
  fleet: FakeFleet;
  workspaceDir: string;
  uid: number;
  progress: ScriptProgress[];
}

async function run(
  code: string,
  options: Partial<Omit<RunScriptOptions, 'limits'>> & { fleet?: FakeFleet; limits?: Partial<ScriptLimits> } = {},
): Promise<Run> {
  const fleet = options.fleet ?? new FakeFleet();
  const workspaceDir = options.workspaceDir ?? (await newWorkspace());
  nextSlot += 1;
  const uid = 64_000 + nextSlot;
  const progress: ScriptProgress[] = [];
  const outcome = await runScript({
    code,
    scriptId: options.scriptId ?? `run-${nextSlot}`,
    workspaceDir,
    readOnly: false,
    runtimeDir,
    python,
    uids: new SandboxUidPool({ base: uid, size: 1 }),
    callTool: fleet.callTool,
    onProgress: (snapshot) => progress.push(snapshot),
    ...options,
    limits: { ...limits, ...options.limits },
  });
  return { outcome, fleet, workspaceDir, uid, progress };
}

const printed = (outcome: ScriptOutcome): string[] => outcome.outputHead.trimEnd().split('\n');

describe('agent_tools API', () => {
  test('call, call_raw, call_many and progress, with records written', async () => {
    const code = `
from agent_tools import call, call_many, call_raw, progress, ToolError
print(call("fleet__get_device_status", {"sn": "A1"}))
print(repr(call("fleet__plain_text", {})), call("fleet__json_text", {}))
print(call_raw("fleet__get_device_status", {"sn": "BAD1"}))
try:
    call("fleet__get_device_status", {"sn": "BAD2"})
except ToolError as error:
    print("ToolError", error.tool, error.code, error.message, error.index)
for sn in ("DENIED",):
    try:
        call_raw("fleet__get_device_status", {"sn": sn})
    except ToolError as error:
        print("raw raises", error.code)
try:
    call("nope__tool", {})
except ToolError as error:
    print("unknown", error.code)
try:
    call("fleet__get_device_status", ["not", "a", "dict"])
except ToolError as error:
    print("local", error.code)
progress(1, 3, "one third")
rows = call_many("fleet__get_device_status", [{"sn": "S%d" % i} for i in range(3)])
print([row["sn"] for row in rows])
progress(3, 3, "done")
`;
    const { outcome, fleet, workspaceDir, progress } = await run(code, { scriptId: 'api' });
    expect(outcome.status).toBe('ok');
    expect(printed(outcome)).toEqual([
      "{'sn': 'A1', 'status': 'online'}",
      "'just text' [1, 2, {'a': 3}]",
      "{'text': 'device BAD1 is offline', 'structured': None, 'is_error': True}",
      'ToolError fleet__get_device_status tool_error device BAD2 is offline None',
      'raw raises not_allowed',
      'unknown unknown_tool',
      'local invalid_args',
      "['S0', 'S1', 'S2']",
    ]);
    expect(fleet.calls.map((call) => call.tool)).toEqual([
      'fleet__get_device_status',
      'fleet__plain_text',
      'fleet__json_text',
      'fleet__get_device_status',
      'fleet__get_device_status',
      'fleet__get_device_status',
      'nope__tool',
      'fleet__get_device_status',
      'fleet__get_device_status',
      'fleet__get_device_status',
    ]);
    expect(outcome).toMatchObject({
      calls: 10,
      failures: 4,
      callsPerTool: { fleet__get_device_status: 7, fleet__plain_text: 1, fleet__json_text: 1, nope__tool: 1 },
      detailsDir: '.agent/scripts/api/',
      exitCode: 0,
    });
    const details = join(workspaceDir, '.agent/scripts/api');
    expect(await readFile(join(details, 'script.py'), 'utf8')).toBe(code);
    expect(await readFile(join(details, 'output.txt'), 'utf8')).toBe(outcome.outputHead);
    const records = (await readFile(join(details, 'calls.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toHaveLength(10);
    expect(records[0]).toMatchObject({ tool: 'fleet__get_device_status', args: { sn: 'A1' }, isError: false });
    expect(records[0]?.summary).toBe('{"sn":"A1","status":"online"}');
    expect(records[4]).toMatchObject({ isError: true, summary: 'device BAD2 is offline' });
    expect(records[4]?.errorCode).toBeUndefined();
    expect(records[5]).toMatchObject({ isError: true, errorCode: 'not_allowed' });
    expect(typeof records[0]?.durationMs).toBe('number');
    expect(progress.at(-1)).toMatchObject({ calls: 10, failures: 4, done: 3, total: 3, message: 'done', status: 'ok' });
  });

  test('call_many keeps input order and return_errors puts each ToolError at its position', async () => {
    const { outcome, fleet } = await run(`
from agent_tools import call_many, ToolError
items = [{"sn": ("BAD%d" % i) if i % 7 == 3 else ("S%d" % i), "delayMs": (120 - i) % 13} for i in range(120)]
rows = call_many("fleet__get_device_status", items, return_errors=True)
print(len(rows))
print(all(isinstance(r, ToolError) == (i % 7 == 3) for i, r in enumerate(rows)))
print([r.index for r in rows if isinstance(r, ToolError)][:3], rows[3].code)
print(all(r["sn"] == "S%d" % i for i, r in enumerate(rows) if not isinstance(r, ToolError)))
`);
    expect(printed(outcome)).toEqual(['120', 'True', '[3, 10, 17] tool_error', 'True']);
    expect(fleet.calls).toHaveLength(120);
    // Completion order differed from input order, so the ordering above is the module's doing.
    const finished = fleet.completed.map((args) => String(args.sn));
    expect(finished).not.toEqual(fleet.calls.map((call) => String(call.args.sn)));
  });

  test('call_many raises the first failure by position once its batch settled, and sends no further batch', async () => {
    const { outcome, fleet } = await run(`
from agent_tools import call_many, ToolError, BATCH_SIZE
def items(bad):
    return [{"sn": "BAD%d" % i if i in bad else "S%d" % i, "delayMs": 40 if i == 10 else 1} for i in range(200)]
for bad in ({10, 30}, {60}):
    try:
        call_many("fleet__get_device_status", items(bad))
    except ToolError as error:
        print(BATCH_SIZE, error.index, error.message)
`);
    expect(printed(outcome)).toEqual(['50 10 device BAD10 is offline', '50 60 device BAD60 is offline']);
    // First run: one batch of 50; second: two batches.
    expect(fleet.calls).toHaveLength(150);
  });

  test('the 2001st call raises ToolError limit', async () => {
    const fleet = new FakeFleet();
    fleet.defaultDelayMs = 0;
    const { outcome } = await run(
      `
from agent_tools import call, call_many, ToolError
rows = call_many("fleet__get_device_status", [{"sn": "S%d" % i} for i in range(2000)])
print(len(rows))
try:
    call("fleet__get_device_status", {"sn": "one-too-many"})
except ToolError as error:
    print(error.code)
`,
      { fleet },
    );
    expect(printed(outcome)).toEqual(['2000', 'limit']);
    expect(fleet.calls).toHaveLength(2000);
    expect(outcome).toMatchObject({ status: 'ok', calls: 2001, failures: 1 });
  });

  test('never more than 4 calls in flight; the rest are queued, not refused', async () => {
    const fleet = new FakeFleet();
    fleet.defaultDelayMs = 15;
    const { outcome } = await run(
      `
import threading
from agent_tools import call, call_many
errors = []
def worker(n):
    try:
        for i in range(10):
            call("fleet__get_device_status", {"sn": "T%d-%d" % (n, i)})
    except Exception as error:
        errors.append(error)
threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
for t in threads: t.start()
rows = call_many("fleet__get_device_status", [{"sn": "M%d" % i} for i in range(60)])
for t in threads: t.join()
print(len(rows), errors)
`,
      { fleet },
    );
    expect(printed(outcome)).toEqual(['60 []']);
    expect(fleet.calls).toHaveLength(140);
    expect(fleet.maxInFlight).toBe(4);
    expect(outcome.failures).toBe(0);
  });

  test('concurrent scripts run under distinct uids from one pool, and the pool refuses when full', async () => {
    const uids = new SandboxUidPool({ base: 65_000, size: 3 });
    const fleet = new FakeFleet();
    const code =
      'import os, time\nfrom agent_tools import call\ncall("fleet__plain_text", {})\ntime.sleep(0.5)\nprint(os.getuid())';
    const runs = ['c1', 'c2', 'c3'].map((scriptId) => run(code, { scriptId, uids, fleet }));
    await sleep(100);
    const refused: unknown = await run('print(1)', { uids }).catch((caught: unknown) => caught);
    expect(isGatewayError(refused) && refused.code).toBe('limit');
    const outcomes = await Promise.all(runs);
    const seen = outcomes.map(({ outcome }) => printed(outcome)[0]).sort();
    expect(seen).toEqual(['65000', '65001', '65002']);
    // A uid goes back to the pool once the check that none of its processes is left has run, after the reply.
    for (let waited = 0; waited < 100 && uids.inUse > 0; waited++) await sleep(20);
    expect(uids.inUse).toBe(0);
  });

  test('progress is pushed at most once a second, plus a final snapshot', async () => {
    const { progress } = await run(`
import time
from agent_tools import progress
for i in range(2000):
    progress(i, 2000, "step %d" % i)
time.sleep(1.3)
progress(2000, 2000, "all")
`);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.length).toBeLessThanOrEqual(4);
    expect(progress.at(-1)).toMatchObject({ done: 2000, total: 2000, message: 'all', status: 'ok' });
    expect(progress.slice(0, -1).every((snapshot) => snapshot.status === 'running')).toBe(true);
  });

  test('a file agent_tools.py in the workspace does not shadow the module', async () => {
    const workspaceDir = await newWorkspace();
    await run('open("agent_tools.py", "w").write("raise SystemExit(\'shadowed\')\\n")', { workspaceDir });
    expect((await readdir(workspaceDir)).sort()).toEqual(['.agent', 'agent_tools.py']);
    const { outcome } = await run(
      `
import agent_tools
print(agent_tools.__file__)
print(agent_tools.call("fleet__plain_text", {}))
`,
      { workspaceDir },
    );
    expect(outcome.status).toBe('ok');
    expect(printed(outcome)).toEqual(['/opt/script-runtime/agent_tools.py', 'just text']);
  });
});

describe('ending a script', () => {
  const daemonScript = `
import os, signal, time
from agent_tools import call
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(600)
    os._exit(0)
os.wait()
call("probe__daemon_started", {})
print("still here", flush=True)
time.sleep(600)
`;

  test('timeout ends the whole tree, including a setsid daemon ignoring SIGTERM, within 2 s', async () => {
    const fleet = new FakeFleet();
    let seen: number[] = [];
    const uidOf = 64_000 + nextSlot + 1;
    fleet.onProbe = async () => {
      seen = await listUidProcesses(uidOf);
    };
    const { outcome, uid } = await run(daemonScript, { fleet, limits: { timeoutSec: 2 } });
    expect(uid).toBe(uidOf);
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(outcome.status).toBe('timed out');
    expect(outcome.killedReason).toBe('timed out after 2 s');
    expect(outcome.durationMs).toBeLessThan(2000 + 2000);
    expect(await listUidProcesses(uid)).toEqual([]);
    expect(printed(outcome)).toEqual(['still here']);
    expect(buildScriptReply(outcome).content[0].text.startsWith('run_script timed out · 1 calls (0 failed) · ')).toBe(
      true,
    );
  });

  test('cancel (AbortSignal) ends the whole tree within 2 s', async () => {
    const fleet = new FakeFleet();
    const controller = new AbortController();
    let abortedAt = 0;
    const uidOf = 64_000 + nextSlot + 1;
    let seen: number[] = [];
    fleet.onProbe = async () => {
      seen = await listUidProcesses(uidOf);
      setTimeout(() => {
        abortedAt = performance.now();
        controller.abort();
      }, 200);
    };
    const { outcome, uid } = await run(daemonScript, { fleet, signal: controller.signal });
    const endedAt = performance.now();
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(outcome.status).toBe('cancelled');
    expect(endedAt - abortedAt).toBeLessThan(2000);
    expect(await listUidProcesses(uid)).toEqual([]);
  });

  test('an exception fails the run with the traceback; sys.exit code is kept', async () => {
    const { outcome } = await run('print("before")\nx = 1\nprint(x / 0)\n');
    expect(outcome).toMatchObject({ status: 'failed', exitCode: 1 });
    expect(outcome.stderrTail).toContain('File "script.py", line 3, in <module>');
    expect(outcome.stderrTail).toContain('print(x / 0)');
    expect(outcome.stderrTail).toContain('ZeroDivisionError');
    expect(outcome.stderrTail).not.toContain('_toolgate_bootstrap');
    const text = buildScriptReply(outcome).content[0].text;
    expect(text).toMatch(
      /^run_script failed · 0 calls \(0 failed\) · \d+\.\d s · details: \.agent\/scripts\/run-\d+\/\nbefore\n--- stderr/,
    );
    const exited = await run('import sys\nsys.exit(3)\n');
    expect(exited.outcome).toMatchObject({ status: 'failed', exitCode: 3 });
    const syntax = await run('def broken(:\n');
    expect(syntax.outcome.status).toBe('failed');
    expect(syntax.outcome.stderrTail).toContain('SyntaxError');
  });

  test('the workspace watchdog ends a script past maxWorkspaceMb', async () => {
    const { outcome } = await run(
      `
import time
for i in range(8):
    with open("blob%d" % i, "wb") as f:
        f.write(b"x" * (5 * 1024 * 1024))
print("written", flush=True)
time.sleep(60)
`,
      { limits: { maxWorkspaceMb: 20 } },
    );
    expect(outcome.status).toBe('failed');
    expect(outcome.killedReason).toBe('workspace over 20 MB');
    expect(outcome.durationMs).toBeLessThan(10_000);
  });
});

describe('what a script writes cannot hurt the gateway', () => {
  test('printing 1 GB: gateway memory stays flat, the reply is cut, output.txt has everything', async () => {
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(process.memoryUsage().rss), 50);
    const before = process.memoryUsage().rss;
    const { outcome, workspaceDir } = await run(
      `
import sys
chunk = "x" * 999_999 + "\\n"
for _ in range(1000):
    sys.stdout.write(chunk)
`,
    );
    clearInterval(sampler);
    const growthMb = (Math.max(...samples, process.memoryUsage().rss) - before) / 1024 / 1024;
    console.log(
      `1 GB of output: gateway RSS grew at most ${growthMb.toFixed(1)} MB, run took ${outcome.durationMs} ms`,
    );
    expect(outcome.status).toBe('ok');
    expect(outcome.outputChars).toBe(1_000_000_000);
    expect(outcome.outputTruncated).toBe(true);
    expect(outcome.outputHead).toHaveLength(20_000);
    expect(growthMb).toBeLessThan(50);
    const file = await stat(join(workspaceDir, outcome.detailsDir, 'output.txt'));
    expect(file.size).toBe(1_000_000_000);
    expect(buildScriptReply(outcome).content[0].text).toContain(
      `[output cut at 20,000 of 1,000,000,000 characters; full output: ${outcome.detailsDir}output.txt]`,
    );
  }, 120_000);

  test('past maxOutputMb the script is ended and output.txt stops at the cap', async () => {
    const { outcome, workspaceDir } = await run('while True:\n    print("y" * 10000)\n', {
      limits: { maxOutputMb: 5 },
    });
    expect(outcome.status).toBe('failed');
    expect(outcome.killedReason).toBe('output over 5 MB');
    expect((await stat(join(workspaceDir, outcome.detailsDir, 'output.txt'))).size).toBe(5 * 1024 * 1024);
  });

  test('garbage, a 50 MB line and invalid UTF-8 on fd 3 get error replies; the gateway carries on', async () => {
    const { outcome, fleet } = await run(`
import json, os
from agent_tools import call, ToolError
os.write(3, b"garbage that is not json\\n")
os.write(3, b'{"id": 900001, "op": "call", "tool": "x", "args": {"blob": "' + b"a" * (50 * 1024 * 1024) + b'"}}\\n')
os.write(3, b'{"id": 900002, "op": "call", "tool": "x", "args": {"s": "\\xff\\xfe"}}\\n')
os.write(3, b'{"id": 900003, "op": "call", "tool":\\n')
os.write(3, b'{"id": 900004, "op": "format_disk"}\\n')
buffer = b""
while buffer.count(b"\\n") < 4:
    buffer += os.read(4, 65536)
for line in buffer.splitlines():
    reply = json.loads(line)
    print(reply["id"], reply["ok"], reply["error"]["code"])
try:
    call("fleet__get_device_status", {"sn": "z" * (2 * 1024 * 1024)})
except ToolError as error:
    print("big call", error.code)
print(call("fleet__get_device_status", {"sn": "after"}))
`);
    expect(outcome.status).toBe('ok');
    expect(printed(outcome)).toEqual([
      '900001 False limit',
      '900002 False invalid_args',
      '900003 False invalid_args',
      '900004 False invalid_args',
      'big call limit',
      "{'sn': 'after', 'status': 'online'}",
    ]);
    expect(fleet.calls).toEqual([{ tool: 'fleet__get_device_status', args: { sn: 'after' } }]);
  });

  test('a script that swaps .agent for a symlink to a host directory gets no record written through it', async () => {
    const workspaceDir = await newWorkspace();
    const victim = join(dataDir, 'victim');
    await mkdir(victim);
    // The workspace is 0777 without the sticky bit, so a script may move the gateway's .agent aside.
    const { outcome } = await run(
      `import os\nos.rename(".agent", ".agent-moved")\nos.symlink(${JSON.stringify(victim)}, ".agent")\nprint("planted")`,
      { workspaceDir },
    );
    expect(printed(outcome)).toEqual(['planted']);
    const error: unknown = await run('print(1)', { workspaceDir }).catch((caught: unknown) => caught);
    expect(isGatewayError(error) && error.code).toBe('not_allowed');
    expect((error as Error).message).toContain('symbolic link');
    expect(await readdir(victim)).toEqual([]);
  });
});

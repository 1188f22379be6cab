import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isGatewayError } from '../src/errors/gateway-error.js';
import type { PythonRuntime } from '../src/sandbox/bwrap-argv.js';
import { checkSandbox } from '../src/sandbox/check-sandbox.js';
import { resolvePythonRuntime } from '../src/sandbox/python-runtime.js';
import { runSandboxed, type SandboxExit } from '../src/sandbox/run-sandboxed.js';
import { SandboxUidPool } from '../src/sandbox/sandbox-uid-pool.js';
import { listUidProcesses } from '../src/sandbox/uid-processes.js';
import { runScript, type ScriptLimits, type ScriptOutcome } from '../src/script/script-runner.js';
import { writeScriptRuntime } from '../src/script/script-runtime.js';

// Real bubblewrap and real Python: the isolation a script gets, seen from inside and from the host.

const SECRET = 'toolgate-test-secret-5f1c9e0a7b';
const limits: ScriptLimits = {
  maxCalls: 2000,
  concurrency: 4,
  timeoutSec: 60,
  memoryMb: 512,
  maxProcesses: 32,
  maxFileSizeMb: 16,
  maxOpenFiles: 64,
  maxWorkspaceMb: 200,
  maxOutputMb: 50,
  maxLineKb: 1024,
};

let python: PythonRuntime;
let dataDir: string;
let runtimeDir: string;
let server: Server;
let serverPort = 0;
const uids = new SandboxUidPool({ base: 62_000, size: 4 });

beforeAll(async () => {
  process.env.TOOLGATE_TEST_SECRET = SECRET;
  python = await resolvePythonRuntime();
  dataDir = await mkdtemp(join(tmpdir(), 'toolgate-sandbox-test-'));
  runtimeDir = await writeScriptRuntime(dataDir);
  await writeFile(join(dataDir, 'config.json'), JSON.stringify({ adminToken: SECRET }));
  server = createServer((socket) => socket.end('hello'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  serverPort = typeof address === 'object' && address ? address.port : 0;
});

afterAll(async () => {
  delete process.env.TOOLGATE_TEST_SECRET;
  await new Promise((resolve) => server.close(resolve));
  await rm(dataDir, { recursive: true, force: true });
});

async function newWorkspace(): Promise<string> {
  const dir = await mkdtemp(join(dataDir, 'ws-'));
  await chmod(dir, 0o777);
  return dir;
}

let nextId = 0;
async function script(code: string, overrides: Partial<ScriptLimits> = {}, readOnly = false): Promise<ScriptOutcome> {
  nextId += 1;
  return runScript({
    code,
    scriptId: `t${nextId}`,
    workspaceDir: await newWorkspace(),
    readOnly,
    runtimeDir,
    python,
    uids,
    limits: { ...limits, ...overrides },
    callTool: () => Promise.resolve({ text: 'ok', isError: false }),
  });
}

/** Runs `python -I -c code` straight in the sandbox (no bootstrap), collecting stdout. */
async function rawPython(
  code: string,
): Promise<{ exit: SandboxExit; stdout: string; pid: number; hostEnviron: string }> {
  const user = uids.acquire();
  try {
    const sandbox = await runSandboxed({
      workspaceDir: await newWorkspace(),
      readOnly: false,
      runtimeDir,
      python,
      uid: user.uid,
      gid: user.gid,
      limits: { memoryMb: 512, maxProcesses: 32, maxFileSizeMb: 16, maxOpenFiles: 512, tmpSizeMb: 16 },
      command: [python.executable, '-I', '-c', code],
    });
    const hostEnviron = await readFile(`/proc/${sandbox.pid}/environ`, 'utf8').catch(() => 'gone');
    const chunks: Buffer[] = [];
    sandbox.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    const exit = await sandbox.closed;
    await sandbox.kill();
    return { exit, stdout: Buffer.concat(chunks).toString('utf8'), pid: sandbox.pid, hostEnviron };
  } finally {
    uids.release(user);
  }
}

/** Descriptors above 4 this test process would hand to a child (no close-on-exec). */
async function inheritableFds(): Promise<number[]> {
  const fds = (await readdir('/proc/self/fd')).map(Number).filter((fd) => fd > 4);
  const open: number[] = [];
  for (const fd of fds) {
    const info = await readFile(`/proc/self/fdinfo/${fd}`, 'utf8').catch(() => '');
    const flags = /^flags:\s+(\d+)/m.exec(info)?.[1];
    if (flags !== undefined && (parseInt(flags, 8) & 0o2000000) === 0) open.push(fd);
  }
  return open;
}

const lines = (outcome: ScriptOutcome): string[] => outcome.outputHead.trim().split('\n');

describe('sandbox isolation (real bubblewrap)', () => {
  test('no network: no interface but lo, localhost and public addresses unreachable', async () => {
    const outcome = await script(`
import socket
print(sorted(name for _, name in socket.if_nameindex()))
for host, port in (("127.0.0.1", ${serverPort}), ("1.1.1.1", 53), ("8.8.8.8", 443)):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, port))
        print("connected", host)
    except OSError as error:
        print("refused", host, type(error).__name__)
`);
    expect(outcome.status).toBe('ok');
    const out = lines(outcome);
    expect(out[0]).toBe("['lo']");
    expect(out.slice(1).every((line) => line.startsWith('refused'))).toBe(true);
    expect(out).toHaveLength(4);
  });

  test('no secret of the gateway inside: environment, /proc/*/environ, and bwrap itself has an empty environment', async () => {
    const outcome = await script(`
import os
secret = ${JSON.stringify(SECRET)}
print("env", secret in repr(dict(os.environ)), sorted(os.environ))
leaks = []
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        if secret.encode() in open("/proc/%s/environ" % pid, "rb").read():
            leaks.append(pid)
    except OSError:
        pass
print("leaks", leaks)
`);
    expect(outcome.status).toBe('ok');
    expect(lines(outcome)).toEqual([
      // PWD is bwrap's own, from --chdir.
      "env False ['HOME', 'LANG', 'PATH', 'PWD', 'PYTHONDONTWRITEBYTECODE', 'PYTHONIOENCODING', 'PYTHONUNBUFFERED']",
      'leaks []',
    ]);
    // From the host: bwrap (what /proc/1/environ inside would show) was started with nothing.
    const raw = await rawPython('import time; time.sleep(0.3)');
    expect(raw.hostEnviron).toBe('');
    expect(process.env.TOOLGATE_TEST_SECRET).toBe(SECRET);
  });

  test('no file outside the workspace: /root, the data dir, /etc secrets; / and /etc not writable', async () => {
    const outcome = await script(`
import os
def probe(path):
    try:
        with open(path) as f:
            return "read"
    except OSError as error:
        return type(error).__name__
print(probe(${JSON.stringify(join(dataDir, 'config.json'))}), probe("/root/.bashrc"), probe("/etc/shadow"), probe("/etc/environment"))
print(sorted(os.listdir("/root")), sorted(os.listdir("/opt/script-runtime")))
for path in ("/x", "/etc/passwd", "/usr/bin/evil", "/opt/script-runtime/agent_tools.py"):
    try:
        open(path, "a").close()
        print("wrote", path)
    except OSError as error:
        print("refused", type(error).__name__)
open("/tmp/scratch", "w").write("ok")
open("/dev/shm/scratch", "w").write("shm")
print(open("/tmp/scratch").read(), open("/dev/shm/scratch").read(), os.getcwd(), os.path.expanduser("~"))
`);
    expect(outcome.status).toBe('ok');
    const out = lines(outcome);
    expect(out[0]).toBe('FileNotFoundError FileNotFoundError FileNotFoundError FileNotFoundError');
    expect(out[1]).toBe("['.pyenv'] ['_toolgate_bootstrap.py', 'agent_tools.py']");
    expect(out.slice(2, 6).every((line) => line.startsWith('refused'))).toBe(true);
    expect(out[6]).toBe('ok shm /workspace /workspace');
  });

  test('unprivileged: uid from the pool, no capabilities, no new privileges, no groups', async () => {
    const outcome = await script(`
import os
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())
print(status["CapEff"].strip(), status["CapPrm"].strip(), status["CapBnd"].strip(), status["NoNewPrivs"].strip())
`);
    const [ids, caps] = lines(outcome);
    const uid = Number(ids?.split(' ')[0]);
    expect(uid).toBeGreaterThanOrEqual(62_000);
    expect(ids).toBe(`${uid} ${uid} ${uid} []`);
    expect(caps).toBe('0000000000000000 0000000000000000 0000000000000000 1');
  });

  test('only fds 0-4 are open in the script, though bwrap passes inherited ones through', async () => {
    const outcome = await script(`
import os
print(sorted(int(fd) for fd in os.listdir("/proc/self/fd") if os.path.exists("/proc/self/fd/" + fd)))
`);
    expect(lines(outcome)).toEqual(['[0, 1, 2, 3, 4]']);
    const inherited = await inheritableFds();
    console.log(`descriptors this test process would leak into a child: ${JSON.stringify(inherited)}`);
    if (inherited.length > 0) {
      // Without the bootstrap the inherited descriptors are visible: the check above can fail.
      const raw = await rawPython('import os; print(sorted(int(f) for f in os.listdir("/proc/self/fd")))');
      const seen = JSON.parse(raw.stdout.trim()) as number[];
      expect(seen).toEqual(expect.arrayContaining(inherited));
    }
  });

  test('RLIMIT_NPROC bounds a fork bomb', async () => {
    const outcome = await script(
      `
import os, time
ok = 0
for _ in range(200):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        ok += 1
    except OSError:
        break
print(ok)
`,
      { maxProcesses: 24 },
    );
    const forks = Number(lines(outcome)[0]);
    expect(forks).toBeGreaterThan(5);
    expect(forks).toBeLessThan(24);
  });

  test('memory limit gives MemoryError, file size limit gives EFBIG', async () => {
    const outcome = await script(
      `
try:
    block = bytearray(600 * 1024 * 1024)
    print("allocated")
except MemoryError:
    print("MemoryError")
try:
    with open("big", "wb") as f:
        f.write(b"x" * (3 * 1024 * 1024))
    print("wrote")
except OSError as error:
    print(error.errno)
`,
      { memoryMb: 256, maxFileSizeMb: 2 },
    );
    expect(lines(outcome)).toEqual(['MemoryError', '27']);
  });

  test('read-only mode: the workspace cannot be written', async () => {
    const outcome = await script(
      `
try:
    open("new.txt", "w")
    print("wrote")
except OSError as error:
    print(type(error).__name__, error.errno)
`,
      {},
      true,
    );
    expect(lines(outcome)).toEqual(['OSError 30']);
  });

  test('files a script creates are usable by the next script under another uid', async () => {
    const workspaceDir = await newWorkspace();
    const run = (code: string, scriptId: string): Promise<ScriptOutcome> =>
      runScript({
        code,
        scriptId,
        workspaceDir,
        readOnly: false,
        runtimeDir,
        python,
        uids: new SandboxUidPool({ base: 63_000 + Number(scriptId.slice(1)), size: 1 }),
        limits,
        callTool: () => Promise.resolve({ text: '', isError: false }),
      });
    const first = await run(
      'import os; os.makedirs("d/e"); open("d/e/f.txt", "w").write("1"); print(os.getuid())',
      'u1',
    );
    const second = await run(
      'import os; open("d/e/f.txt", "a").write("2"); os.remove("d/e/f.txt"); print(os.getuid())',
      'u2',
    );
    expect(first.status).toBe('ok');
    expect(second.status).toBe('ok');
    expect(first.outputHead).not.toBe(second.outputHead);
  });
});

describe('process tree and availability', () => {
  test('kill() ends a double-forked setsid daemon that ignores SIGTERM within 2 s', async () => {
    const user = uids.acquire();
    try {
      const sandbox = await runSandboxed({
        workspaceDir: await newWorkspace(),
        readOnly: false,
        runtimeDir,
        python,
        uid: user.uid,
        gid: user.gid,
        limits: { memoryMb: 512, maxProcesses: 32, maxFileSizeMb: 16, maxOpenFiles: 64, tmpSizeMb: 16 },
        command: [
          python.executable,
          '-I',
          '-c',
          `
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(600)
    os._exit(0)
os.wait()
print("ready", flush=True)
time.sleep(600)
`,
        ],
      });
      await new Promise<void>((resolve) => sandbox.stdout.once('data', () => resolve()));
      const before = await listUidProcesses(user.uid);
      expect(before.length).toBeGreaterThanOrEqual(2);
      const started = performance.now();
      const exit = await sandbox.kill();
      const after = await listUidProcesses(user.uid);
      expect(performance.now() - started).toBeLessThan(2000);
      expect(exit.exitCode === null || exit.exitCode !== 0).toBe(true);
      // Gone by bwrap's own death (--die-with-parent, PID namespace), not by the uid sweep behind it.
      expect(exit.stragglers).toBe(0);
      expect(after).toEqual([]);
      for (const pid of before) await expect(readFile(`/proc/${pid}/status`, 'utf8')).rejects.toThrow();
    } finally {
      uids.release(user);
    }
  });

  test('without bubblewrap: sandbox_unavailable naming the package, never a fallback', async () => {
    const spec = {
      workspaceDir: await newWorkspace(),
      readOnly: false,
      runtimeDir,
      python,
      uid: 62_999,
      gid: 62_999,
      limits: { memoryMb: 512, maxProcesses: 32, maxFileSizeMb: 16, maxOpenFiles: 64, tmpSizeMb: 16 },
      command: ['/usr/bin/touch', '/workspace/ran'],
    };
    const error: unknown = await runSandboxed(spec, { bwrapPaths: ['/nonexistent/bwrap'] }).catch(
      (caught: unknown) => caught,
    );
    expect(isGatewayError(error) && error.code).toBe('sandbox_unavailable');
    expect((error as Error).message).toBe('bubblewrap is not installed: apt-get install bubblewrap');
    await expect(readdir(spec.workspaceDir)).resolves.toEqual([]);
  });

  test('Python: a missing or too old interpreter is a clear sandbox_unavailable', async () => {
    const missing: unknown = await resolvePythonRuntime({ command: '/nonexistent/python3' }).catch(
      (caught: unknown) => caught,
    );
    expect(isGatewayError(missing) && missing.code).toBe('sandbox_unavailable');
    expect((missing as Error).message).toMatch(/needs Python 3\.9 or newer/);
    const old = join(dataDir, 'python3.8');
    await writeFile(
      old,
      '#!/bin/sh\necho \'{"executable": "/usr/bin/python3.11", "basePrefix": "/usr", "version": [3, 8, 18]}\'\n',
      { mode: 0o755 },
    );
    const tooOld: unknown = await resolvePythonRuntime({ command: old }).catch((caught: unknown) => caught);
    expect((tooOld as Error).message).toBe(`run_script needs Python 3.9 or newer, "${old}" is 3.8.18`);
    // The pyenv shim is resolved to the real interpreter and its prefix.
    expect(python.executable.endsWith('/python3') || /python3\.\d+$/.test(python.executable)).toBe(true);
    expect(python.executable.startsWith(`${python.basePrefix}/`) || python.executable.startsWith('/usr/')).toBe(true);
  });

  test('checkSandbox passes here, and measures the start-up cost', async () => {
    const check = await checkSandbox({ python, uids });
    expect(check).toMatchObject({ ok: true, problems: [] });
    const bare = performance.now();
    await new Promise<void>((resolve) =>
      execFile(python.executable, ['-I', '-c', 'print(1)'], { env: {} }, () => resolve()),
    );
    const bareMs = performance.now() - bare;
    const sandboxed = performance.now();
    const raw = await rawPython('print(1)');
    const sandboxedMs = performance.now() - sandboxed;
    expect(raw.stdout).toBe('1\n');
    console.log(`print(1): bare python ${bareMs.toFixed(0)} ms, sandboxed ${sandboxedMs.toFixed(0)} ms`);
  });
});

import { execFile, spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBwrapArgv, type PythonRuntime } from '../src/sandbox/bwrap-argv.js';
import { resolvePythonRuntime } from '../src/sandbox/python-runtime.js';
import { runSandboxed } from '../src/sandbox/run-sandboxed.js';
import { SandboxUidPool } from '../src/sandbox/sandbox-uid-pool.js';
import type { ScriptLimits } from '../src/script/script-runner.js';
import { writeScriptRuntime } from '../src/script/script-runtime.js';

// The processes figure 2 times, one function each: bare Python, pieces of the sandbox, the bootstrap.

/** The interpreter flags the script runner uses (src/script/script-runner.ts). */
export const GATEWAY_FLAGS = ['-I', '-B', '-u', '-X', 'utf8'];

export const LIMITS: ScriptLimits = {
  maxCalls: 2000,
  concurrency: 4,
  timeoutSec: 60,
  memoryMb: 1024,
  maxProcesses: 64,
  maxFileSizeMb: 256,
  maxOpenFiles: 256,
  maxWorkspaceMb: 2048,
  maxOutputMb: 2048,
  maxLineKb: 1024,
};

/** Spawns a process, drains it and resolves when it has closed; rejects unless it printed `expect`. */
export function spawnAndWait(command: string, args: string[], expect: string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.resume();
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0 && (expect === undefined || stdout === expect)) resolve();
      else reject(new Error(`${command} ${args.join(' ')} exited ${String(code)} printing ${JSON.stringify(stdout)}`));
    });
  });
}

export interface Fixture {
  python: PythonRuntime;
  workspaceDir: string;
  runtimeDir: string;
  uids: SandboxUidPool;
  /** Names the FIFOs mkfifoOnce makes. */
  fifos: number;
  cleanup(): Promise<void>;
}

export async function createFixture(): Promise<Fixture> {
  const python = await resolvePythonRuntime();
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-bench-start-'));
  const runtimeDir = await writeScriptRuntime(dir);
  const workspaceDir = join(dir, 'workspace');
  await mkdir(workspaceDir);
  await chmod(workspaceDir, 0o777);
  // Its own uid range, clear of the gateway's 61000–61063.
  const uids = new SandboxUidPool({ base: 63_000, size: 4 });
  return { python, workspaceDir, runtimeDir, uids, fifos: 0, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** runSandboxed as the runner uses it: spawn, drain, wait for the exit, make sure the uid is empty. */
export async function sandboxed(fixture: Fixture, command: string[], expect: string | undefined): Promise<void> {
  const user = fixture.uids.acquire();
  try {
    const sandbox = await runSandboxed({
      workspaceDir: fixture.workspaceDir,
      readOnly: false,
      runtimeDir: fixture.runtimeDir,
      python: fixture.python,
      uid: user.uid,
      gid: user.gid,
      limits: { ...LIMITS, tmpSizeMb: 1024 },
      command,
    });
    let stdout = '';
    sandbox.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    sandbox.stderr.resume();
    sandbox.fromSandbox.resume();
    const exit = await sandbox.closed;
    await sandbox.kill();
    if (exit.exitCode !== 0 || (expect !== undefined && stdout !== expect))
      throw new Error(`sandboxed ${command.join(' ')} exited ${String(exit.exitCode)} printing ${stdout}`);
  } finally {
    fixture.uids.release(user);
  }
}

/** The gateway's bwrap command line up to its `--`, running /bin/true as root inside: bwrap's own share. */
export function bwrapOnlyArgv(fixture: Fixture): string[] {
  const argv = buildBwrapArgv({
    workspaceDir: fixture.workspaceDir,
    readOnly: false,
    runtimeDir: fixture.runtimeDir,
    python: fixture.python,
    uid: 63_999,
    gid: 63_999,
    limits: { ...LIMITS, tmpSizeMb: 1024 },
    command: ['/bin/true'],
  });
  return [...argv.slice(0, argv.indexOf('--') + 1), '/bin/true'];
}

/** The bootstrap outside the sandbox, fed a start line on its fd 4, with fd 3 open for writing. */
export async function bootstrapAlone(exe: string, runtimeDir: string): Promise<void> {
  const start = `${JSON.stringify({ op: 'start', code: 'print(1)' })}\n`;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(exe, [...GATEWAY_FLAGS, join(runtimeDir, '_toolgate_bootstrap.py')], {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.resume();
    const requests = child.stdio[3] as NodeJS.ReadableStream;
    requests.resume();
    (child.stdio[4] as NodeJS.WritableStream).write(start);
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 && stdout === '1\n' ? resolve() : reject(new Error(`bootstrap exited ${String(code)}: ${stdout}`)),
    );
  });
}

export async function mkfifoOnce(fixture: Fixture): Promise<void> {
  fixture.fifos += 1;
  const path = join(fixture.workspaceDir, `.fifo-${fixture.fifos}`);
  await new Promise<void>((resolve, reject) =>
    execFile('/usr/bin/mkfifo', ['-m', '0600', path], { env: {} }, (error) =>
      error ? reject(new Error(`mkfifo: ${error.message}`)) : resolve(),
    ),
  );
  await rm(path);
}

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants as fsConstants, openSync } from 'node:fs';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { GatewayError } from '../errors/gateway-error.js';
import { buildBwrapArgv, type SandboxSpec } from './bwrap-argv.js';
import { killUidProcesses, listUidProcesses } from './uid-processes.js';

export const DEFAULT_BWRAP_PATHS = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'] as const;

export interface SandboxExit {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

export interface SandboxKilled extends SandboxExit {
  /** Processes of the sandbox uid still alive after bwrap had gone, killed one by one (0 unless something is wrong). */
  stragglers: number;
}

export interface SandboxedProcess {
  readonly pid: number;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** The sandbox's fd 3: the read end of a real pipe, so nothing but bytes can come through. */
  readonly fromSandbox: Readable;
  /** The sandbox's fd 4: the write end of a real pipe; the gateway cannot read what a script writes there. */
  readonly toSandbox: Writable;
  /** Resolves when bwrap has exited and stdout/stderr are closed. */
  readonly closed: Promise<SandboxExit>;
  /**
   * SIGTERM, a short grace, then SIGKILL to bwrap (which takes the whole PID namespace with it);
   * resolves once no process of the sandbox uid is left. Safe to call any time, any number of times.
   */
  kill(): Promise<SandboxKilled>;
}

export interface RunSandboxedOptions {
  /** Where to look for bwrap; the first executable one wins. */
  bwrapPaths?: readonly string[];
  /** Between SIGTERM and SIGKILL. */
  killGraceMs?: number;
  /** Runs the start (pipes and spawn); the engine passes a serial queue so a burst of starts is spread out. */
  startGate?: <T>(start: () => Promise<T>) => Promise<T>;
}

const GONE_DEADLINE_MS = 1500;

/** The first executable bwrap, or `sandbox_unavailable`: there is never a fallback to running unsandboxed. */
export async function findBwrap(paths: readonly string[] = DEFAULT_BWRAP_PATHS): Promise<string> {
  for (const path of paths) {
    try {
      await access(path, fsConstants.X_OK);
      return path;
    } catch {
      // try the next one
    }
  }
  throw new GatewayError('sandbox_unavailable', 'bubblewrap is not installed: apt-get install bubblewrap');
}

interface PipePair {
  /** Ends the gateway keeps. */
  readFromSandbox: number;
  writeToSandbox: number;
  /** Ends the sandbox gets as fd 3 and fd 4. */
  sandboxWrite: number;
  sandboxRead: number;
}

/** Node has no pipe(2); two FIFOs in a private directory, opened and unlinked at once, are real pipes. */
async function createPipes(): Promise<PipePair> {
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-pipes-'));
  try {
    const up = join(dir, 'up');
    const down = join(dir, 'down');
    await new Promise<void>((resolve, reject) => {
      execFile('/usr/bin/mkfifo', ['-m', '0600', up, down], { env: {} }, (error) => {
        if (error) reject(new Error(`mkfifo failed: ${error.message}`, { cause: error }));
        else resolve();
      });
    });
    // A non-blocking read open succeeds without a writer; the write opens then succeed at once.
    // libuv opens with O_CLOEXEC, so no other child inherits these; spawn's dup2 to fd 3/4 clears it there.
    const readFromSandbox = openSync(up, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const sandboxWrite = openSync(up, fsConstants.O_WRONLY);
    const sandboxRead = openSync(down, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const writeToSandbox = openSync(down, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK);
    return { readFromSandbox, writeToSandbox, sandboxWrite, sandboxRead };
  } catch (error) {
    throw new GatewayError('sandbox_unavailable', 'could not create the pipes for the sandbox (mkfifo)', {
      cause: error,
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Waits until no process of `uid` is left; past the deadline SIGKILLs the stragglers (not expected:
 * --die-with-parent takes the PID namespace down) and returns how many there were.
 */
async function ensureUidGone(uid: number): Promise<number> {
  const deadline = Date.now() + GONE_DEADLINE_MS;
  while ((await listUidProcesses(uid)).length > 0) {
    if (Date.now() >= deadline) return (await killUidProcesses(uid)).length;
    await delay(20);
  }
  return 0;
}

/**
 * Spawns bwrap for `spec` from the calling (main) thread with an empty environment: bwrap's own
 * environment is readable at /proc/1/environ inside. stdin is ignored, stdout/stderr are pipes,
 * fd 3 and fd 4 are the script channel.
 */
export async function runSandboxed(spec: SandboxSpec, options: RunSandboxedOptions = {}): Promise<SandboxedProcess> {
  const argv = buildBwrapArgv(spec);
  const bwrap = await findBwrap(options.bwrapPaths);
  const start = async (): Promise<{ child: ChildProcess; pipes: PipePair }> => {
    const pipes = await createPipes();
    try {
      const child = spawn(bwrap, argv, {
        env: {},
        stdio: ['ignore', 'pipe', 'pipe', pipes.sandboxWrite, pipes.sandboxRead],
      });
      return { child, pipes };
    } catch (error) {
      closeSync(pipes.readFromSandbox);
      closeSync(pipes.writeToSandbox);
      throw new GatewayError('sandbox_unavailable', `could not start bubblewrap (${bwrap})`, { cause: error });
    } finally {
      // The child has its copies now (or none); ours would keep the pipes from ever reaching EOF.
      closeSync(pipes.sandboxWrite);
      closeSync(pipes.sandboxRead);
    }
  };
  const { child, pipes } = await (options.startGate === undefined ? start() : options.startGate(start));
  const fromSandbox = new Socket({ fd: pipes.readFromSandbox, readable: true, writable: false });
  const toSandbox = new Socket({ fd: pipes.writeToSandbox, readable: false, writable: true });
  // A sandbox that exits or closes its end makes these fail; the exit itself is what gets reported.
  fromSandbox.on('error', () => undefined);
  toSandbox.on('error', () => undefined);

  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
  } catch (error) {
    fromSandbox.destroy();
    toSandbox.destroy();
    throw new GatewayError('sandbox_unavailable', `could not start bubblewrap (${bwrap})`, { cause: error });
  }
  const { pid, stdout, stderr } = child;
  if (pid === undefined || !stdout || !stderr)
    throw new GatewayError('internal', 'bubblewrap started without pid or pipes');

  const exited = new Promise<SandboxExit>((resolve) => {
    child.once('exit', (exitCode, signal) => {
      toSandbox.destroy();
      resolve({ exitCode, signal });
    });
  });
  const closed = new Promise<SandboxExit>((resolve) => {
    child.once('close', (exitCode, signal) => resolve({ exitCode, signal }));
  });
  const graceMs = options.killGraceMs ?? 300;
  let killing: Promise<SandboxKilled> | undefined;
  const kill = async (): Promise<SandboxKilled> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const first = await Promise.race([exited, delay(graceMs).then(() => undefined)]);
      if (first === undefined) child.kill('SIGKILL');
    }
    const exit = await exited;
    return { ...exit, stragglers: await ensureUidGone(spec.uid) };
  };

  return {
    pid,
    stdout,
    stderr,
    fromSandbox,
    toSandbox,
    closed,
    kill: () => (killing ??= kill()),
  };
}

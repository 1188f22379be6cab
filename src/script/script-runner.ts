import type { Readable } from 'node:stream';
import { SANDBOX_RUNTIME, type PythonRuntime } from '../sandbox/bwrap-argv.js';
import { runSandboxed, type RunSandboxedOptions, type SandboxExit } from '../sandbox/run-sandboxed.js';
import type { SandboxUidPool } from '../sandbox/sandbox-uid-pool.js';
import { encodeStart } from './bridge-protocol.js';
import { CallGate } from './call-gate.js';
import { OutputCapture } from './output-capture.js';
import { ProgressThrottle } from './progress-throttle.js';
import { ScriptBridge, type CallTool } from './script-bridge.js';
import { openWorkspaceRecords, type OpenScriptRecords, type ScriptRecords } from './script-records.js';
import { BOOTSTRAP_FILE } from './script-runtime.js';
import { startWorkspaceWatchdog } from './workspace-watchdog.js';

/** The `scripts` settings (config-schema's ScriptSettings has this shape). */
export interface ScriptLimits {
  maxCalls: number;
  concurrency: number;
  timeoutSec: number;
  memoryMb: number;
  maxProcesses: number;
  maxFileSizeMb: number;
  maxOpenFiles: number;
  maxWorkspaceMb: number;
  maxOutputMb: number;
  maxLineKb: number;
}

export type ScriptStatus = 'ok' | 'failed' | 'timed out' | 'cancelled';

/** Pushed as `script.progress`; never stored. */
export interface ScriptProgress {
  calls: number;
  failures: number;
  done: number | null;
  total: number | null;
  message: string;
  elapsedMs: number;
  status: 'running' | ScriptStatus;
}

export interface RunScriptOptions {
  code: string;
  /** Names the records directory `.agent/scripts/<scriptId>/`: letters, digits, `_` and `-`. */
  scriptId: string;
  workspaceDir: string;
  readOnly: boolean;
  /** From writeScriptRuntime(). */
  runtimeDir: string;
  /** From resolvePythonRuntime(). */
  python: PythonRuntime;
  uids: SandboxUidPool;
  limits: ScriptLimits;
  callTool: CallTool;
  /** At most once a second while running, plus one final snapshot. */
  onProgress?: (progress: ScriptProgress) => void;
  /** Client cancel: ends the process tree, status `cancelled`. */
  signal?: AbortSignal;
  /** Where records go; default `<workspace>/.agent/scripts/<id>/` written without following links. */
  openRecords?: OpenScriptRecords;
  sandbox?: RunSandboxedOptions;
  /** Workspace size check period (default 1 s). */
  watchdogIntervalMs?: number;
  /** How the workspace is measured; the engine shares one serial `du` queue between all its scripts. */
  measureWorkspace?: (dir: string) => Promise<number>;
}

export interface ScriptOutcome {
  status: ScriptStatus;
  exitCode: number | null;
  signal: string | null;
  calls: number;
  failures: number;
  callsPerTool: Record<string, number>;
  durationMs: number;
  /** The first {@link OUTPUT_HEAD_CHARS} characters of stdout. */
  outputHead: string;
  outputChars: number;
  outputTruncated: boolean;
  stderrTail: string;
  /** Relative to the workspace: `.agent/scripts/<id>/`. */
  detailsDir: string;
  /** Why the gateway ended the script, when it did. */
  killedReason?: string;
}

export const OUTPUT_HEAD_CHARS = 20_000;
const STDERR_TAIL_BYTES = 8192;
const MB = 1024 * 1024;
/** How long to wait for cancelled calls to settle after the script ended. */
const SETTLE_MS = 2000;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Feeds a child stream into a capture, pausing it while the record file catches up. */
function pump(stream: Readable, capture: OutputCapture): void {
  stream.on('data', (chunk: Buffer) => {
    if (!capture.write(chunk)) {
      stream.pause();
      capture.onceWritable(() => stream.resume());
    }
  });
}

/**
 * Runs one script in the sandbox and talks to it until it ends. Resolves with the outcome (also
 * for a failed, timed-out or cancelled script); rejects only when the run could not start.
 */
export async function runScript(options: RunScriptOptions): Promise<ScriptOutcome> {
  const { limits } = options;
  const startedAt = performance.now();
  // The uid first: when every slot is busy, no records directory is left behind.
  const user = options.uids.acquire();
  let records: ScriptRecords;
  try {
    records = await (options.openRecords ?? openWorkspaceRecords)(options.workspaceDir, options.scriptId, options.code);
  } catch (error) {
    options.uids.release(user);
    throw error;
  }
  let killed: { status: ScriptStatus; reason: string } | undefined;
  let endSandbox: (() => Promise<SandboxExit>) | undefined;
  const stop = (status: ScriptStatus, reason: string): void => {
    killed ??= { status, reason };
    void endSandbox?.();
  };
  const callsAbort = new AbortController();
  const progress = { done: null as number | null, total: null as number | null, message: '' };
  let bridge: ScriptBridge | undefined;
  let finalStatus: ScriptProgress['status'] = 'running';
  const throttle = new ProgressThrottle(1000, () => {
    try {
      options.onProgress?.({
        calls: bridge?.calls ?? 0,
        failures: bridge?.failures ?? 0,
        ...progress,
        elapsedMs: Math.round(performance.now() - startedAt),
        status: finalStatus,
      });
    } catch {
      // A failing progress listener must not end the run (it fires from a timer).
    }
  });
  const output = new OutputCapture({
    headChars: OUTPUT_HEAD_CHARS,
    tailBytes: STDERR_TAIL_BYTES,
    maxBytes: limits.maxOutputMb * MB,
    sink: records.output,
    onOverflow: () => stop('failed', `output over ${limits.maxOutputMb} MB`),
  });
  const errors = new OutputCapture({
    headChars: 0,
    tailBytes: STDERR_TAIL_BYTES,
    maxBytes: limits.maxOutputMb * MB,
    sink: records.stderr,
    onOverflow: () => stop('failed', `error output over ${limits.maxOutputMb} MB`),
  });
  const timers: (() => void)[] = [];
  try {
    const sandbox = await runSandboxed(
      {
        workspaceDir: options.workspaceDir,
        readOnly: options.readOnly,
        runtimeDir: options.runtimeDir,
        python: options.python,
        uid: user.uid,
        gid: user.gid,
        limits: {
          memoryMb: limits.memoryMb,
          maxProcesses: limits.maxProcesses,
          maxFileSizeMb: limits.maxFileSizeMb,
          maxOpenFiles: limits.maxOpenFiles,
          tmpSizeMb: Math.min(limits.memoryMb, limits.maxWorkspaceMb),
        },
        // -I: no cwd or user site on sys.path, PYTHON* ignored; -u/-B/-X utf8 stand in for those variables.
        // -S: scripts use the standard library only, and skipping site (and the .pth files it runs) halves start-up.
        command: [
          options.python.executable,
          '-I',
          '-S',
          '-B',
          '-u',
          '-X',
          'utf8',
          `${SANDBOX_RUNTIME}/${BOOTSTRAP_FILE}`,
        ],
      },
      options.sandbox,
    );
    endSandbox = () => sandbox.kill();
    if (killed) void sandbox.kill();
    bridge = new ScriptBridge({
      requests: sandbox.fromSandbox,
      replies: sandbox.toSandbox,
      maxLineBytes: limits.maxLineKb * 1024,
      gate: new CallGate(limits.maxCalls, limits.concurrency),
      callTool: options.callTool,
      signal: callsAbort.signal,
      onCall: (record) => {
        records.appendCall(record);
        throttle.changed();
      },
      onProgress: (report) => {
        progress.done = report.done;
        progress.total = report.total ?? null;
        progress.message = report.message ?? '';
        throttle.changed();
      },
    });
    sandbox.toSandbox.write(encodeStart(options.code));
    pump(sandbox.stdout, output);
    pump(sandbox.stderr, errors);

    const timeout = setTimeout(
      () => stop('timed out', `timed out after ${limits.timeoutSec} s`),
      limits.timeoutSec * 1000,
    );
    timers.push(() => clearTimeout(timeout));
    const onAbort = (): void => stop('cancelled', 'cancelled');
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    timers.push(() => options.signal?.removeEventListener('abort', onAbort));
    timers.push(
      startWorkspaceWatchdog({
        dir: options.workspaceDir,
        maxBytes: limits.maxWorkspaceMb * MB,
        intervalMs: options.watchdogIntervalMs ?? 1000,
        ...(options.measureWorkspace === undefined ? {} : { measure: options.measureWorkspace }),
        onExceeded: () => stop('failed', `workspace over ${limits.maxWorkspaceMb} MB`),
      }),
    );

    const closed = await sandbox.closed;
    // Also on a normal exit: makes sure nothing of the sandbox uid is left before the uid is reused. The
    // PID namespace already ended with bwrap, so this check need not delay the reply: the uid waits for it.
    const ending = sandbox.kill();
    if (killed !== undefined) await ending;
    callsAbort.abort(new Error('the script has ended'));
    await Promise.race([bridge.settled(), delay(SETTLE_MS)]);
    for (const clear of timers) clear();
    const status: ScriptStatus = killed?.status ?? (closed.exitCode === 0 ? 'ok' : 'failed');
    finalStatus = status;
    throttle.finish();
    return {
      status,
      exitCode: closed.exitCode,
      signal: closed.signal,
      calls: bridge.calls,
      failures: bridge.failures,
      callsPerTool: { ...bridge.callsPerTool },
      durationMs: Math.round(performance.now() - startedAt),
      outputHead: output.head(),
      outputChars: output.chars,
      outputTruncated: output.chars > OUTPUT_HEAD_CHARS,
      stderrTail: errors.tail(),
      detailsDir: records.detailsDir,
      ...(killed ? { killedReason: killed.reason } : {}),
    };
  } finally {
    for (const clear of timers) clear();
    callsAbort.abort();
    await records.close();
    // kill() is idempotent: this is the same check as above, or the end of a run that failed midway.
    void (endSandbox?.() ?? Promise.resolve()).then(
      () => options.uids.release(user),
      () => options.uids.release(user),
    );
  }
}

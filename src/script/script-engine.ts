import type { ScriptSettings } from '../config/config-schema.js';
import type { PythonRuntime } from '../sandbox/bwrap-argv.js';
import { resolvePythonRuntime } from '../sandbox/python-runtime.js';
import { SandboxUidPool } from '../sandbox/sandbox-uid-pool.js';
import { createSerialQueue } from '../sandbox/serial-queue.js';
import type { NormalisedResult } from '../pipeline/normalise-result.js';
import { runScript, type ScriptOutcome, type ScriptProgress } from './script-runner.js';
import { writeScriptRuntime } from './script-runtime.js';
import { createSerialDiskUsage } from './workspace-watchdog.js';

export interface ScriptRunRequest {
  code: string;
  scriptId: string;
  workspaceDir: string;
  readOnly: boolean;
  signal?: AbortSignal;
  callTool: (tool: string, args: Record<string, unknown>, signal: AbortSignal) => Promise<NormalisedResult>;
  onProgress: (progress: ScriptProgress) => void;
}

/**
 * What every script run shares: the runtime files in `<dataDir>/script-runtime/`, the resolved Python and
 * the pool of sandbox uids. Python is resolved on first use, so a machine without it still serves tools.
 */
export class ScriptEngine {
  private readonly uids = new SandboxUidPool();
  private readonly measureWorkspace = createSerialDiskUsage();
  private readonly startGate = createSerialQueue(5);
  private prepared: Promise<{ runtimeDir: string; python: PythonRuntime }> | undefined;

  constructor(private readonly options: { dataDir: string; limits: ScriptSettings; environment: NodeJS.ProcessEnv }) {}

  private ready(): Promise<{ runtimeDir: string; python: PythonRuntime }> {
    this.prepared ??= Promise.all([
      writeScriptRuntime(this.options.dataDir),
      resolvePythonRuntime({ env: this.options.environment }),
    ]).then(([runtimeDir, python]) => ({ runtimeDir, python }));
    // A failed preparation (Python missing) is retried on the next run instead of being cached forever.
    this.prepared.catch(() => (this.prepared = undefined));
    return this.prepared;
  }

  async run(request: ScriptRunRequest): Promise<ScriptOutcome> {
    const { runtimeDir, python } = await this.ready();
    return runScript({
      code: request.code,
      scriptId: request.scriptId,
      workspaceDir: request.workspaceDir,
      readOnly: request.readOnly,
      runtimeDir,
      python,
      uids: this.uids,
      measureWorkspace: this.measureWorkspace,
      sandbox: { startGate: this.startGate },
      limits: this.options.limits,
      onProgress: request.onProgress,
      ...(request.signal === undefined ? {} : { signal: request.signal }),
      callTool: async (tool, args, signal) => {
        const result = await request.callTool(tool, args, signal);
        return { text: result.text, structured: result.structured ?? null, isError: result.isError };
      },
    });
  }
}

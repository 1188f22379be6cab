import { execFile } from 'node:child_process';
import { cpus, release, totalmem, type as osType } from 'node:os';
import { resolvePythonRuntime } from '../src/sandbox/python-runtime.js';
import { findBwrap } from '../src/sandbox/run-sandboxed.js';

export interface MachineDetails {
  cpu: string;
  cores: number;
  memoryGb: number;
  os: string;
  node: string;
  python: string;
  bwrap: string;
}

function firstLineOf(command: string, args: string[]): Promise<string> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: 10_000 }, (error, stdout, stderr) => {
      resolve(error ? `unknown (${error.message})` : (`${stdout}${stderr}`.trim().split('\n')[0] ?? ''));
    });
  });
}

/** What the figures depend on, written beside every result. */
export async function describeMachine(): Promise<MachineDetails> {
  const python = await resolvePythonRuntime().then(
    (runtime) => `${runtime.version} (${runtime.executable})`,
    (error: unknown) => `unavailable (${String(error)})`,
  );
  const bwrap = await findBwrap().then(
    (path) => firstLineOf(path, ['--version']),
    () => 'bubblewrap not installed',
  );
  return {
    cpu: cpus()[0]?.model.trim() ?? 'unknown CPU',
    cores: cpus().length,
    memoryGb: totalmem() / 1024 ** 3,
    os: `${osType()} ${release()}`,
    node: process.version,
    python,
    bwrap,
  };
}

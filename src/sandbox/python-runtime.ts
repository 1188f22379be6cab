import { execFile } from 'node:child_process';
import { realpath } from 'node:fs/promises';
import { posix } from 'node:path';
import { z } from 'zod';
import { GatewayError } from '../errors/gateway-error.js';
import type { PythonRuntime } from './bwrap-argv.js';

const MINIMUM_VERSION = [3, 9] as const;

/** Asks the interpreter itself, because `python3` on PATH may be a pyenv shim (a bash script). */
const PROBE =
  'import json, sys; print(json.dumps({"executable": sys.executable, "basePrefix": sys.base_prefix, "version": list(sys.version_info[:3])}))';

const probeSchema = z.object({
  executable: z.string().min(1),
  basePrefix: z.string().min(1),
  version: z.tuple([z.number().int(), z.number().int(), z.number().int()]),
});

function runProbe(command: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, ['-I', '-c', PROBE], { env, timeout: 20_000, maxBuffer: 64 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${error.message}${stderr ? `: ${stderr.trim()}` : ''}`, { cause: error }));
      else resolve(stdout);
    });
  });
}

function parseLastLine(output: string): unknown {
  try {
    return JSON.parse(output.trim().split('\n').at(-1) ?? '');
  } catch {
    return undefined;
  }
}

export interface ResolvePythonOptions {
  /** The command to ask (default `python3`, looked up on PATH). */
  command?: string;
  /** Environment for the probe only (the shim needs PATH/PYENV_*); never passed into a sandbox. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Resolves the real Python interpreter once at start-up: shim → `sys.executable` (symlinks
 * resolved) and `sys.base_prefix`, version ≥ 3.9. Throws `sandbox_unavailable` with what to fix.
 */
export async function resolvePythonRuntime(options: ResolvePythonOptions = {}): Promise<PythonRuntime> {
  const command = options.command ?? 'python3';
  let output: string;
  try {
    output = await runProbe(command, options.env ?? process.env);
  } catch (error) {
    throw new GatewayError(
      'sandbox_unavailable',
      `run_script needs Python ${MINIMUM_VERSION.join('.')} or newer: running "${command}" failed (install python3)`,
      { cause: error },
    );
  }
  const parsed = probeSchema.safeParse(parseLastLine(output));
  if (!parsed.success) {
    throw new GatewayError('sandbox_unavailable', `"${command}" did not describe itself as a Python interpreter`);
  }
  const { version, basePrefix } = parsed.data;
  const [major, minor] = version;
  if (major < MINIMUM_VERSION[0] || (major === MINIMUM_VERSION[0] && minor < MINIMUM_VERSION[1])) {
    throw new GatewayError(
      'sandbox_unavailable',
      `run_script needs Python ${MINIMUM_VERSION.join('.')} or newer, "${command}" is ${version.join('.')}`,
    );
  }
  const executable = await realpath(parsed.data.executable);
  const prefix = await realpath(basePrefix);
  // Only the prefix (and /usr) is bound into the sandbox, so the interpreter must live there.
  if (!executable.startsWith(`${prefix}/`) && !executable.startsWith('/usr/')) {
    throw new GatewayError(
      'sandbox_unavailable',
      `the Python interpreter ${executable} is outside its prefix ${prefix}; point run_script at another python3`,
    );
  }
  return { executable, basePrefix: posix.normalize(prefix), version: version.join('.') };
}

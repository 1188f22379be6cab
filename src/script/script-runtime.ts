import { access, chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GatewayError } from '../errors/gateway-error.js';

/** The Python files of the runtime, kept as real .py files in src/script/ so they can be linted and read. */
export const RUNTIME_FILES = ['agent_tools.py', '_toolgate_bootstrap.py'] as const;

export const BOOTSTRAP_FILE = '_toolgate_bootstrap.py';

/**
 * tsc does not copy .py files, so from `dist/src/script/` the sources are found back in the repo's
 * `src/script/`; both layouts are tried, nearest first.
 */
async function findSourceDir(): Promise<string> {
  const candidates = [new URL('./', import.meta.url), new URL('../../../src/script/', import.meta.url)];
  for (const candidate of candidates) {
    const dir = fileURLToPath(candidate);
    try {
      await access(join(dir, 'agent_tools.py'));
      return dir;
    } catch {
      // try the next layout
    }
  }
  throw new GatewayError('internal', 'agent_tools.py was not found next to the script engine (src/script/)');
}

/**
 * Writes agent_tools.py and the bootstrap to `<dataDir>/script-runtime/` (at start-up), readable by
 * the unprivileged sandbox uids; returns the directory. Each file is replaced atomically.
 */
export async function writeScriptRuntime(dataDir: string): Promise<string> {
  const sourceDir = await findSourceDir();
  const runtimeDir = join(dataDir, 'script-runtime');
  await mkdir(runtimeDir, { recursive: true, mode: 0o755 });
  await chmod(runtimeDir, 0o755);
  for (const name of RUNTIME_FILES) {
    const source = await readFile(join(sourceDir, name));
    const temporary = join(runtimeDir, `.${name}.${process.pid}.tmp`);
    await writeFile(temporary, source, { mode: 0o644 });
    await chmod(temporary, 0o644);
    await rename(temporary, join(runtimeDir, name));
  }
  return runtimeDir;
}

import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { describeForClient } from '../errors/gateway-error.js';
import type { PythonRuntime } from './bwrap-argv.js';
import { resolvePythonRuntime } from './python-runtime.js';
import { runSandboxed, type RunSandboxedOptions } from './run-sandboxed.js';
import { SandboxUidPool } from './sandbox-uid-pool.js';

export interface SandboxCheck {
  ok: boolean;
  /** What is wrong and what to do, one sentence each; empty when ok. */
  problems: string[];
  /** Wall time of the sandboxed `print(1)`-sized probe. */
  durationMs?: number;
}

export interface CheckSandboxOptions {
  python?: PythonRuntime;
  uids?: SandboxUidPool;
  sandbox?: RunSandboxedOptions;
}

/** Prints 1, then what the isolation looks like from inside. */
const PROBE = [
  'import json, os, socket',
  'print(1)',
  'caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]',
  'try:',
  '    open("/probe", "w"); root_writable = True',
  'except OSError:',
  '    root_writable = False',
  'print(json.dumps({"uid": os.getuid(), "capEff": caps, "interfaces": [n for _, n in socket.if_nameindex()], "rootWritable": root_writable}))',
].join('\n');

const probeSchema = z.object({
  uid: z.number(),
  capEff: z.string(),
  interfaces: z.array(z.string()),
  rootWritable: z.boolean(),
});

/** For `toolgate doctor`: runs a trivial sandboxed Python and reports anything missing or not isolated. */
export async function checkSandbox(options: CheckSandboxOptions = {}): Promise<SandboxCheck> {
  const problems: string[] = [];
  if (process.getuid?.() !== 0)
    problems.push('the gateway is not running as root, so sandboxes cannot drop to their own uid');
  let python: PythonRuntime;
  try {
    python = options.python ?? (await resolvePythonRuntime());
  } catch (error) {
    return { ok: false, problems: [...problems, describeForClient(error)] };
  }
  const uids = options.uids ?? new SandboxUidPool({ size: 1 });
  const user = uids.acquire();
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-check-'));
  const started = performance.now();
  try {
    await chmod(dir, 0o755);
    const sandbox = await runSandboxed(
      {
        workspaceDir: dir,
        readOnly: true,
        runtimeDir: dir,
        python,
        uid: user.uid,
        gid: user.gid,
        limits: { memoryMb: 512, maxProcesses: 16, maxFileSizeMb: 16, maxOpenFiles: 64, tmpSizeMb: 16 },
        command: [python.executable, '-I', '-c', PROBE],
      },
      options.sandbox,
    );
    const chunks: Buffer[] = [];
    const errors: Buffer[] = [];
    sandbox.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    sandbox.stderr.on('data', (chunk: Buffer) => errors.push(chunk));
    const timer = setTimeout(() => void sandbox.kill(), 20_000);
    const exit = await sandbox.closed;
    clearTimeout(timer);
    await sandbox.kill();
    const [first, second] = Buffer.concat(chunks).toString('utf8').split('\n');
    if (exit.exitCode !== 0 || first !== '1') {
      const stderr = Buffer.concat(errors).toString('utf8').trim().slice(-500);
      problems.push(
        `a sandboxed print(1) failed (exit ${exit.exitCode ?? exit.signal}): ${stderr || 'no error output'}`,
      );
    } else {
      const seen = probeSchema.safeParse(JSON.parse(second ?? 'null'));
      if (!seen.success) problems.push('the sandbox probe printed something unexpected');
      else {
        if (seen.data.uid === 0) problems.push('the sandbox runs as uid 0');
        if (!/^0+$/.test(seen.data.capEff)) problems.push(`the sandbox has capabilities (CapEff ${seen.data.capEff})`);
        if (seen.data.interfaces.some((name) => name !== 'lo')) problems.push('the sandbox has a network interface');
        if (seen.data.rootWritable) problems.push('the sandbox root file system is writable');
      }
    }
  } catch (error) {
    problems.push(describeForClient(error));
  } finally {
    uids.release(user);
    await rm(dir, { recursive: true, force: true });
  }
  return { ok: problems.length === 0, problems, durationMs: Math.round(performance.now() - started) };
}

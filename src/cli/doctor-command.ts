import { accessSync, constants, mkdirSync } from 'node:fs';
import { createEventBus } from '../events/event-bus.js';
import { version } from '../gateway.js';
import { createLogger } from '../log/logger.js';
import { resolvePythonRuntime } from '../sandbox/python-runtime.js';
import { findBwrap } from '../sandbox/run-sandboxed.js';
import { checkSandbox } from '../sandbox/check-sandbox.js';
import { ServiceRegistry } from '../upstream/service-registry.js';
import type { CliContext } from './cli-context.js';

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Each check says what it found, or what to install or fix. */
export async function runDoctor(context: () => CliContext, out: (line: string) => void): Promise<number> {
  const checks: Check[] = [];
  const major = Number(process.versions.node.split('.')[0]);
  checks.push({
    name: 'node',
    ok: major >= 20,
    detail:
      major >= 20
        ? `Node ${process.versions.node}`
        : `Node ${process.versions.node} is too old: install Node 20 or newer`,
  });
  let python: Awaited<ReturnType<typeof resolvePythonRuntime>> | undefined;
  try {
    python = await resolvePythonRuntime();
    checks.push({ name: 'python', ok: true, detail: `${python.executable} (Python ${python.version})` });
  } catch (error) {
    checks.push({ name: 'python', ok: false, detail: `${message(error)} — on Debian: apt-get install python3` });
  }
  try {
    const bwrap = await findBwrap();
    checks.push({ name: 'bubblewrap', ok: true, detail: bwrap });
    if (python !== undefined) {
      const sandbox = await checkSandbox({ python });
      checks.push({
        name: 'sandbox',
        ok: sandbox.ok,
        detail: sandbox.ok
          ? `a sandboxed print(1) ran in ${Math.round(sandbox.durationMs ?? 0)} ms: no network, unprivileged uid, no capabilities`
          : sandbox.problems.join(' '),
      });
    }
  } catch (error) {
    checks.push({ name: 'bubblewrap', ok: false, detail: message(error) });
  }
  let ctx: CliContext | undefined;
  try {
    ctx = context();
    checks.push({ name: 'config', ok: true, detail: ctx.configSource });
  } catch (error) {
    checks.push({ name: 'config', ok: false, detail: message(error) });
  }
  if (ctx !== undefined) {
    try {
      mkdirSync(ctx.dataDir, { recursive: true, mode: 0o700 });
      accessSync(ctx.dataDir, constants.W_OK);
      checks.push({ name: 'data dir', ok: true, detail: ctx.dataDir });
    } catch (error) {
      checks.push({ name: 'data dir', ok: false, detail: `${ctx.dataDir} is not writable: ${message(error)}` });
    }
    const registry = new ServiceRegistry(ctx.config, {
      logger: createLogger({ level: 'silent' }),
      events: createEventBus(),
      environment: ctx.environment,
      version,
    });
    await registry.start();
    for (const [name, state] of Object.entries(registry.serviceStates())) {
      const tools = [...registry.catalogue().entries.values()].filter((entry) => entry.service === name).length;
      checks.push({
        name: `service ${name}`,
        ok: state.state === 'up',
        detail:
          state.state === 'up'
            ? `up, ${tools} tools, protocol ${state.protocolVersion ?? '?'}`
            : `${state.state}: ${state.error ?? 'no answer'} — check its command/url in the config`,
      });
    }
    await registry.close();
  }
  for (const check of checks) out(`${check.ok ? 'ok  ' : 'FAIL'}  ${check.name.padEnd(16)} ${check.detail}`);
  const failed = checks.filter((check) => !check.ok).length;
  out(failed === 0 ? 'everything needed is in place' : `${failed} problem(s) found`);
  return failed === 0 ? 0 : 1;
}

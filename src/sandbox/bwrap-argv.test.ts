import { describe, expect, test } from 'vitest';
import { buildBwrapArgv, buildSandboxEnv, SANDBOX_RUNTIME, SANDBOX_WORKSPACE, type SandboxSpec } from './bwrap-argv.js';

const python = {
  executable: '/root/.pyenv/versions/3.11.7/bin/python3.11',
  basePrefix: '/root/.pyenv/versions/3.11.7',
  version: '3.11.7',
};

function spec(overrides: Partial<SandboxSpec> = {}): SandboxSpec {
  return {
    workspaceDir: '/data/workspaces/s-1',
    readOnly: false,
    runtimeDir: '/data/script-runtime',
    python,
    uid: 61003,
    gid: 61003,
    limits: { memoryMb: 1024, maxProcesses: 64, maxFileSizeMb: 256, maxOpenFiles: 256, tmpSizeMb: 128 },
    command: [python.executable, '-I', '/opt/script-runtime/boot.py'],
    ...overrides,
  };
}

/** Index of the operation `flag a b` (or `flag a`) in the argv, -1 when absent. */
function indexOf(argv: string[], ...operation: string[]): number {
  return argv.findIndex((_, index) => operation.every((part, offset) => argv[index + offset] === part));
}

/** The bwrap part only (before the first `--`), so the inner command cannot satisfy an assertion. */
function bwrapPart(argv: string[]): string[] {
  return argv.slice(0, argv.indexOf('--'));
}

describe('buildBwrapArgv', () => {
  test('isolates: namespaces but no user namespace, no capabilities kept, dies with the gateway', () => {
    const argv = bwrapPart(buildBwrapArgv(spec()));
    for (const flag of [
      '--unshare-pid',
      '--unshare-net',
      '--unshare-ipc',
      '--unshare-uts',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
    ]) {
      expect(argv).toContain(flag);
    }
    expect(indexOf(argv, '--cap-drop', 'ALL')).toBeGreaterThanOrEqual(0);
    const added = argv.flatMap((arg, index) => (arg === '--cap-add' ? [argv[index + 1]] : []));
    expect(added.sort()).toEqual(['CAP_SETGID', 'CAP_SETPCAP', 'CAP_SETUID']);
    for (const flag of ['--as-pid-1', '--unshare-user', '--unshare-all', '--share-net', '--uid'])
      expect(argv).not.toContain(flag);
  });

  test('binds system dirs, the Python prefix and the runtime read-only, never all of /etc', () => {
    const argv = bwrapPart(buildBwrapArgv(spec()));
    expect(indexOf(argv, '--ro-bind-try', '/usr', '/usr')).toBeGreaterThanOrEqual(0);
    expect(indexOf(argv, '--ro-bind', python.basePrefix, python.basePrefix)).toBeGreaterThanOrEqual(0);
    expect(indexOf(argv, '--ro-bind', '/data/script-runtime', SANDBOX_RUNTIME)).toBeGreaterThanOrEqual(0);
    expect(indexOf(argv, '--ro-bind-try', '/etc/ld.so.cache', '/etc/ld.so.cache')).toBeGreaterThanOrEqual(0);
    expect(indexOf(argv, '--ro-bind-try', '/etc/passwd', '/etc/passwd')).toBeGreaterThanOrEqual(0);
    expect(argv.some((arg, index) => arg.endsWith('bind') && argv[index + 1] === '/etc')).toBe(false);
    for (const secret of ['/etc/shadow', '/etc/environment', '/etc/ssh', '/root']) {
      expect(argv.some((arg, index) => arg.includes('bind') && argv[index + 1] === secret)).toBe(false);
    }
  });

  test('creates the parents of the Python prefix traversable (0755) before binding it', () => {
    const argv = bwrapPart(buildBwrapArgv(spec()));
    const bind = indexOf(argv, '--ro-bind', python.basePrefix, python.basePrefix);
    let previous = -1;
    for (const parent of ['/root', '/root/.pyenv', '/root/.pyenv/versions']) {
      const at = indexOf(argv, '--perms', '0755', '--dir', parent);
      expect(at, parent).toBeGreaterThan(previous);
      previous = at;
    }
    expect(bind).toBeGreaterThan(previous);
  });

  test('a Python under /usr needs no extra bind', () => {
    const system = { executable: '/usr/bin/python3.11', basePrefix: '/usr', version: '3.11.2' };
    const argv = bwrapPart(buildBwrapArgv(spec({ python: system })));
    expect(argv.filter((arg, index) => arg === '--ro-bind' && argv[index + 1] === '/usr')).toEqual([]);
    expect(indexOf(argv, '--ro-bind-try', '/usr', '/usr')).toBeGreaterThanOrEqual(0);
  });

  test('the workspace is read-write, or read-only in read-only mode, and the cwd', () => {
    const rw = bwrapPart(buildBwrapArgv(spec()));
    expect(indexOf(rw, '--bind', '/data/workspaces/s-1', SANDBOX_WORKSPACE)).toBeGreaterThanOrEqual(0);
    const ro = bwrapPart(buildBwrapArgv(spec({ readOnly: true })));
    expect(indexOf(ro, '--ro-bind', '/data/workspaces/s-1', SANDBOX_WORKSPACE)).toBeGreaterThanOrEqual(0);
    expect(indexOf(ro, '--bind', '/data/workspaces/s-1', SANDBOX_WORKSPACE)).toBe(-1);
    expect(indexOf(rw, '--chdir', SANDBOX_WORKSPACE)).toBeGreaterThanOrEqual(0);
  });

  test('private /tmp with a size, proc and dev, and / remounted read-only after every mount', () => {
    const argv = bwrapPart(buildBwrapArgv(spec()));
    expect(indexOf(argv, '--size', String(128 * 1024 * 1024), '--tmpfs', '/tmp')).toBeGreaterThanOrEqual(0);
    expect(indexOf(argv, '--proc', '/proc')).toBeGreaterThanOrEqual(0);
    expect(indexOf(argv, '--dev', '/dev')).toBeGreaterThanOrEqual(0);
    const remount = indexOf(argv, '--remount-ro', '/');
    const mountFlags = new Set(['--bind', '--ro-bind', '--ro-bind-try', '--dir', '--tmpfs', '--proc', '--dev']);
    const lastMount = argv.reduce((last, arg, index) => (mountFlags.has(arg) ? index : last), -1);
    expect(remount).toBeGreaterThan(lastMount);
    expect(indexOf(argv, '--remount-ro', '/dev')).toBeGreaterThan(indexOf(argv, '--dev', '/dev'));
  });

  test('the environment is the minimal allow-list', () => {
    const argv = bwrapPart(buildBwrapArgv(spec()));
    const env: Record<string, string | undefined> = Object.fromEntries(
      argv.flatMap((arg, index) => (arg === '--setenv' ? [[argv[index + 1] ?? '', argv[index + 2]] as const] : [])),
    );
    expect(env).toEqual(buildSandboxEnv(python));
    expect(Object.keys(env).sort()).toEqual(
      ['HOME', 'LANG', 'PATH', 'PYTHONDONTWRITEBYTECODE', 'PYTHONIOENCODING', 'PYTHONUNBUFFERED'].sort(),
    );
    expect(env.HOME).toBe(SANDBOX_WORKSPACE);
    expect(env.PATH?.startsWith('/root/.pyenv/versions/3.11.7/bin:')).toBe(true);
  });

  test('drops to the given uid, then sets limits hard = soft, then runs the command', () => {
    const argv = buildBwrapArgv(spec());
    const inner = argv.slice(argv.indexOf('--') + 1);
    expect(inner.slice(0, 8)).toEqual([
      '/usr/bin/setpriv',
      '--reuid=61003',
      '--regid=61003',
      '--clear-groups',
      '--no-new-privs',
      '--bounding-set=-all',
      '--inh-caps=-all',
      '--',
    ]);
    const limits = inner.slice(8, 15);
    expect(limits).toEqual([
      '/usr/bin/prlimit',
      `--as=${1024 * 1024 * 1024}:${1024 * 1024 * 1024}`,
      '--nproc=64:64',
      `--fsize=${256 * 1024 * 1024}:${256 * 1024 * 1024}`,
      '--nofile=256:256',
      '--core=0:0',
      '--',
    ]);
    expect(inner.slice(15)).toEqual([python.executable, '-I', '/opt/script-runtime/boot.py']);
  });

  test('refuses root, relative paths, zero limits and an empty command', () => {
    expect(() => buildBwrapArgv(spec({ uid: 0 }))).toThrow(/uid/);
    expect(() => buildBwrapArgv(spec({ workspaceDir: 'ws' }))).toThrow(/workspaceDir/);
    expect(() => buildBwrapArgv(spec({ workspaceDir: '/data/../etc' }))).toThrow(/workspaceDir/);
    expect(() => buildBwrapArgv(spec({ limits: { ...spec().limits, maxProcesses: 0 } }))).toThrow(/maxProcesses/);
    expect(() => buildBwrapArgv(spec({ command: [] }))).toThrow(/command/);
  });
});

import { posix } from 'node:path';

/** Where things appear inside every sandbox; fixed so scripts see stable paths and no host layout. */
export const SANDBOX_WORKSPACE = '/workspace';
export const SANDBOX_RUNTIME = '/opt/script-runtime';

/** util-linux tools run inside the sandbox from the read-only /usr. */
export const SETPRIV_PATH = '/usr/bin/setpriv';
export const PRLIMIT_PATH = '/usr/bin/prlimit';

/** System directories bound read-only; on merged-/usr hosts the top-level ones are symlinks, which a bind follows. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib64', '/lib32', '/libx32'] as const;

/**
 * The only parts of /etc a Python process needs: the dynamic linker cache, time zone, user and
 * host names, MIME types, OS identity and the alternatives symlinks. Everything else in /etc may
 * hold a secret (`/etc/environment`, service configs, keys), so it is left out.
 */
const ETC_ALLOW_LIST = [
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'passwd',
  'group',
  'nsswitch.conf',
  'hosts',
  'host.conf',
  'services',
  'protocols',
  'mime.types',
  'os-release',
  'alternatives',
] as const;

export interface SandboxLimits {
  /** RLIMIT_AS of every process inside. */
  memoryMb: number;
  /** RLIMIT_NPROC of the sandbox uid (threads count too). */
  maxProcesses: number;
  /** RLIMIT_FSIZE: the largest file a process may write. */
  maxFileSizeMb: number;
  /** RLIMIT_NOFILE. */
  maxOpenFiles: number;
  /** Size of the private /tmp and /dev/shm (tmpfs lives in RAM, so this is bounded too). */
  tmpSizeMb: number;
}

export interface PythonRuntime {
  /** The real interpreter (not a pyenv shim), absolute and symlink-free. */
  executable: string;
  /** `sys.base_prefix`: bound at the same path because libpython is found by absolute path. */
  basePrefix: string;
  /** e.g. "3.11.7". */
  version: string;
}

export interface SandboxSpec {
  /** Host directory mounted at {@link SANDBOX_WORKSPACE}; the current directory and HOME inside. */
  workspaceDir: string;
  readOnly: boolean;
  /** Host `<dataDir>/script-runtime`, mounted read-only at {@link SANDBOX_RUNTIME}. */
  runtimeDir: string;
  python: PythonRuntime;
  /** Unprivileged host uid/gid the command runs as; one per concurrent sandbox (RLIMIT_NPROC counts per uid). */
  uid: number;
  gid: number;
  limits: SandboxLimits;
  /** What runs inside, after privileges are dropped and limits set. */
  command: readonly string[];
}

const MB = 1024 * 1024;

/** True when `path` is `dir` itself or below it. */
function isWithin(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/** Every ancestor of an absolute path, outermost first, without `/` and without the path itself. */
function ancestorsOf(path: string): string[] {
  const parts = posix.normalize(path).split('/').filter(Boolean);
  return parts.slice(0, -1).map((_, index) => `/${parts.slice(0, index + 1).join('/')}`);
}

/** bwrap 0.8 creates missing parents 0700, which a non-root uid cannot traverse; create them 0755 first. */
function traversableParents(path: string): string[] {
  const covered = (dir: string): boolean => SYSTEM_DIRS.some((system) => isWithin(dir, system));
  return ancestorsOf(path)
    .filter((dir) => !covered(dir))
    .flatMap((dir) => ['--perms', '0755', '--dir', dir]);
}

function assertAbsolute(label: string, path: string): void {
  if (!posix.isAbsolute(path) || posix.normalize(path) !== path || (path !== '/' && path.endsWith('/'))) {
    throw new TypeError(`${label} must be a normalised absolute path, got ${JSON.stringify(path)}`);
  }
}

function assertPositiveInteger(label: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`${label} must be a positive integer`);
}

/** The environment inside: nothing of the gateway's, only what Python and a shell need. */
export function buildSandboxEnv(python: PythonRuntime): Record<string, string> {
  return {
    PATH: `${posix.dirname(python.executable)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: SANDBOX_WORKSPACE,
    LANG: 'C.UTF-8',
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1',
    PYTHONIOENCODING: 'utf-8',
  };
}

/** Privilege drop then limits: setpriv leaves no capability (bounding and inheritable sets cleared), prlimit sets hard = soft. */
function buildInnerPrefix(spec: SandboxSpec): string[] {
  const { limits } = spec;
  const both = (value: number): string => `${value}:${value}`;
  return [
    SETPRIV_PATH,
    `--reuid=${spec.uid}`,
    `--regid=${spec.gid}`,
    '--clear-groups',
    '--no-new-privs',
    '--bounding-set=-all',
    '--inh-caps=-all',
    '--',
    PRLIMIT_PATH,
    `--as=${both(limits.memoryMb * MB)}`,
    `--nproc=${both(limits.maxProcesses)}`,
    `--fsize=${both(limits.maxFileSizeMb * MB)}`,
    `--nofile=${both(limits.maxOpenFiles)}`,
    '--core=0:0',
    '--',
  ];
}

/**
 * The bubblewrap command line for one sandboxed process (without the bwrap executable itself).
 *
 * No user namespace on purpose: `--unshare-all` implies one in which only uid 0 is mapped, so
 * the host uid stays root and RLIMIT_NPROC is ignored; we unshare the same namespaces but the
 * user one and drop to `spec.uid` with setpriv (see docs/decisions/0002-sandbox.md).
 */
export function buildBwrapArgv(spec: SandboxSpec): string[] {
  assertAbsolute('workspaceDir', spec.workspaceDir);
  assertAbsolute('runtimeDir', spec.runtimeDir);
  assertAbsolute('python.executable', spec.python.executable);
  assertAbsolute('python.basePrefix', spec.python.basePrefix);
  if (spec.uid === 0 || spec.gid === 0) throw new TypeError('the sandbox must not run as uid or gid 0');
  assertPositiveInteger('uid', spec.uid);
  assertPositiveInteger('gid', spec.gid);
  for (const [name, value] of Object.entries(spec.limits) as [string, number][]) {
    assertPositiveInteger(`limits.${name}`, value);
  }
  if (spec.command.length === 0) throw new TypeError('command must not be empty');

  const prefix = spec.python.basePrefix;
  const prefixIsSystem = SYSTEM_DIRS.some((dir) => isWithin(prefix, dir));
  const tmpBytes = String(spec.limits.tmpSizeMb * MB);
  const env = Object.entries(buildSandboxEnv(spec.python)).flatMap(([name, value]) => ['--setenv', name, value]);

  return [
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'sandbox',
    '--die-with-parent',
    '--new-session',
    // Only what setpriv needs to switch uid; it clears all of them before exec.
    '--cap-drop',
    'ALL',
    '--cap-add',
    'CAP_SETUID',
    '--cap-add',
    'CAP_SETGID',
    '--cap-add',
    'CAP_SETPCAP',
    '--clearenv',
    ...env,
    ...SYSTEM_DIRS.flatMap((dir) => ['--ro-bind-try', dir, dir]),
    '--perms',
    '0755',
    '--dir',
    '/etc',
    ...ETC_ALLOW_LIST.flatMap((name) => ['--ro-bind-try', `/etc/${name}`, `/etc/${name}`]),
    ...(prefixIsSystem ? [] : [...traversableParents(prefix), '--ro-bind', prefix, prefix]),
    ...traversableParents(SANDBOX_RUNTIME),
    '--ro-bind',
    spec.runtimeDir,
    SANDBOX_RUNTIME,
    spec.readOnly ? '--ro-bind' : '--bind',
    spec.workspaceDir,
    SANDBOX_WORKSPACE,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--perms',
    '1777',
    '--size',
    tmpBytes,
    '--tmpfs',
    '/tmp',
    '--perms',
    '1777',
    '--size',
    tmpBytes,
    '--tmpfs',
    '/dev/shm',
    '--remount-ro',
    '/dev',
    '--remount-ro',
    '/',
    '--chdir',
    SANDBOX_WORKSPACE,
    '--',
    ...buildInnerPrefix(spec),
    ...spec.command,
  ];
}

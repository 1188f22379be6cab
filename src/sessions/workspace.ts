import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, chmod, lstat, mkdir, open, readdir, rename, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { GatewayError } from '../errors/gateway-error.js';
import {
  checkEntry,
  describeRelativePath,
  lstatAt,
  openDirectory,
  openDirectoryAt,
  pathAt,
  splitRelativePath,
  toWorkspaceError,
} from './confined-path.js';

/**
 * The directory name of a session's workspace: a readable slug plus 16 hex characters of a hash of the whole id,
 * so any id (`..`, `/`, NUL, 10 KB, unicode) maps to one safe name and distinct ids to distinct names.
 */
export function workspaceDirName(sessionId: string): string {
  const slug = sessionId
    .replace(/[^A-Za-z0-9_-]+/g, '_')
    .replace(/^-+/, '')
    .slice(0, 40);
  // UTF-16 code units are hashed rather than UTF-8 so that ids differing only in lone surrogates stay distinct.
  const hash = createHash('sha256').update(Buffer.from(sessionId, 'utf16le')).digest('hex').slice(0, 16);
  return `${slug === '' ? 'session' : slug}-${hash}`;
}

export interface ReadFileOptions {
  /** Byte offset to start at; default 0. */
  offset?: number;
  /** Bytes to read; default the rest of the file, never more than the reader's cap. */
  length?: number;
  /** 'text' decodes UTF-8 (a character cut by the range becomes U+FFFD); default 'text'. */
  as?: 'text' | 'bytes';
}

interface ReadRange {
  /** Size of the whole file in bytes. */
  size: number;
  offset: number;
  /** True when the read reached the end of the file. */
  eof: boolean;
}

export type WorkspaceRead =
  (ReadRange & { kind: 'text'; text: string }) | (ReadRange & { kind: 'bytes'; bytes: Buffer });

export interface WorkspaceEntry {
  kind: 'file' | 'directory';
  size: number;
  modifiedMs: number;
}

/** Largest single read, so one request cannot pull a huge file into memory. */
const defaultMaxReadBytes = 8 * 1024 * 1024;
const temporaryPrefix = '.toolgate-tmp-';
const readFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

function checkByteCount(value: number | undefined, name: string): number | undefined {
  if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) {
    throw new GatewayError('invalid_args', `${name} must be a non-negative integer`);
  }
  return value;
}

/**
 * Session workspaces under `<dataDir>/workspaces/`. The gateway runs as root and scripts can leave symlinks in a
 * workspace, so every access walks the path by fd without following links and only touches regular files.
 */
export class Workspaces {
  readonly root: string;
  readonly #maxReadBytes: number;

  /** Use `openWorkspaces`, which checks that the platform offers what confinement relies on. */
  constructor(dataDir: string, options: { maxReadBytes?: number } = {}) {
    this.root = join(dataDir, 'workspaces');
    this.#maxReadBytes = options.maxReadBytes ?? defaultMaxReadBytes;
  }

  /** Creates the session's workspace on first use; returns its absolute directory. */
  async ensure(sessionId: string): Promise<string> {
    // Only the gateway may list or enter the parent: sandboxes see their own workspace through a bind mount.
    await mkdir(this.root, { recursive: true, mode: 0o700 });
    await chmod(this.root, 0o700);
    const dir = join(this.root, workspaceDirName(sessionId));
    let created = false;
    try {
      await mkdir(dir);
      created = true;
    } catch (error) {
      if (!(error instanceof Error && 'code' in error && error.code === 'EEXIST')) throw error;
    }
    const stats = await lstat(dir);
    if (!stats.isDirectory()) throw new GatewayError('internal', 'a session workspace is not a directory');
    // World-writable because scripts run as an unprivileged uid (one per concurrent sandbox) and must write here.
    if (created) await chmod(dir, 0o777);
    return dir;
  }

  /** Writes a file atomically (temporary file, then rename), creating parent directories. */
  async writeFile(sessionId: string, relativePath: string, data: string | Uint8Array): Promise<void> {
    const components = splitRelativePath(relativePath);
    const name = components.pop();
    if (name === undefined) throw new GatewayError('not_allowed', 'a file path is needed, not the workspace itself');
    await this.#withDirectory(sessionId, components, relativePath, 0o777, async (directory) => {
      const existing = await lstatAt(directory, name);
      if (existing !== undefined) checkEntry(existing, 'file', relativePath);
      const temporary = `${temporaryPrefix}${randomBytes(8).toString('hex')}`;
      const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
      const file = await open(pathAt(directory, temporary), flags, 0o644);
      try {
        await file.writeFile(data);
        await file.chmod(0o644);
      } finally {
        await file.close();
      }
      try {
        // rename replaces a directory entry and never follows a link that might have appeared at `name`.
        await rename(pathAt(directory, temporary), pathAt(directory, name));
      } catch (error) {
        await unlink(pathAt(directory, temporary)).catch(() => undefined);
        throw error;
      }
    });
  }

  /** Reads a byte range of a regular file. */
  async readFile(sessionId: string, relativePath: string, options: ReadFileOptions = {}): Promise<WorkspaceRead> {
    const offset = checkByteCount(options.offset, 'offset') ?? 0;
    const length = checkByteCount(options.length, 'length');
    const components = splitRelativePath(relativePath);
    const name = components.pop();
    if (name === undefined) throw new GatewayError('not_allowed', 'a file path is needed, not the workspace itself');
    return this.#withDirectory(sessionId, components, relativePath, undefined, async (directory) => {
      const before = await lstatAt(directory, name);
      checkEntry(before, 'file', relativePath);
      const file = await open(pathAt(directory, name), readFlags);
      try {
        const stats = await file.stat();
        // The entry could have been replaced between lstat and open; O_NOFOLLOW ruled out a link, this rules out a swap.
        if (!stats.isFile() || stats.ino !== before.ino || stats.dev !== before.dev) {
          throw new GatewayError('not_allowed', `${describeRelativePath(relativePath)} changed while being opened`);
        }
        const wanted = Math.min(
          length ?? Number.MAX_SAFE_INTEGER,
          Math.max(0, stats.size - offset),
          this.#maxReadBytes,
        );
        const buffer = Buffer.alloc(wanted);
        let filled = 0;
        while (filled < wanted) {
          const { bytesRead } = await file.read(buffer, filled, wanted - filled, offset + filled);
          if (bytesRead === 0) break;
          filled += bytesRead;
        }
        const bytes = buffer.subarray(0, filled);
        const range = { size: stats.size, offset, eof: offset + filled >= stats.size };
        return options.as === 'bytes'
          ? { kind: 'bytes', bytes, ...range }
          : { kind: 'text', text: bytes.toString('utf8'), ...range };
      } finally {
        await file.close();
      }
    });
  }

  /** Relative paths of the regular files in the workspace, sorted, depth first; symlinks are skipped. */
  async list(
    sessionId: string,
    options: { maxEntries?: number } = {},
  ): Promise<{ paths: string[]; truncated: boolean }> {
    const maxEntries = options.maxEntries ?? 1000;
    const paths: string[] = [];
    // Bounds the walk itself too, so a tree of millions of empty directories cannot keep the gateway busy.
    let budget = maxEntries * 10 + 1000;
    const walk = async (directory: FileHandle, prefix: string): Promise<boolean> => {
      const entries = await readdir(`/proc/self/fd/${directory.fd}`, { withFileTypes: true });
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const entry of entries) {
        budget -= 1;
        if (paths.length >= maxEntries || budget < 0) return false;
        if (entry.isFile() && !entry.name.startsWith(temporaryPrefix)) paths.push(`${prefix}${entry.name}`);
        if (!entry.isDirectory()) continue;
        const child = await openDirectoryAt(directory, [entry.name], `${prefix}${entry.name}`).catch(() => undefined);
        if (child === undefined) continue;
        try {
          if (!(await walk(child, `${prefix}${entry.name}/`))) return false;
        } finally {
          await child.close();
        }
      }
      return true;
    };
    const complete = await this.#withDirectory(sessionId, [], '.', undefined, (directory) => walk(directory, ''));
    return { paths, truncated: !complete };
  }

  /** Kind, size and modification time of a file or directory; refuses symlinks and other kinds. */
  async stat(sessionId: string, relativePath: string): Promise<WorkspaceEntry> {
    const components = splitRelativePath(relativePath);
    const name = components.pop();
    return this.#withDirectory(sessionId, components, relativePath, undefined, async (directory) => {
      const stats = name === undefined ? await directory.stat() : await lstatAt(directory, name);
      const kind = stats?.isDirectory() === true ? 'directory' : 'file';
      checkEntry(stats, kind, relativePath);
      return { kind, size: stats.size, modifiedMs: stats.mtimeMs };
    });
  }

  /** Runs `action` with the (confined) directory of `components` open, mapping fs errors to GatewayErrors. */
  async #withDirectory<T>(
    sessionId: string,
    components: readonly string[],
    relativePath: string,
    createMode: number | undefined,
    action: (directory: FileHandle) => Promise<T>,
  ): Promise<T> {
    const workspace = await openDirectory(await this.ensure(sessionId));
    try {
      const directory = await openDirectoryAt(workspace, components, relativePath, createMode);
      try {
        return await action(directory);
      } finally {
        await directory.close();
      }
    } catch (error) {
      throw toWorkspaceError(error, relativePath, 'access');
    } finally {
      await workspace.close();
    }
  }
}

/** Creates the workspace manager after checking that /proc/self/fd, which confinement relies on, is available. */
export async function openWorkspaces(dataDir: string, options: { maxReadBytes?: number } = {}): Promise<Workspaces> {
  try {
    await access('/proc/self/fd');
  } catch (error) {
    throw new GatewayError('internal', 'workspaces need /proc/self/fd (Linux with /proc mounted)', { cause: error });
  }
  const workspaces = new Workspaces(dataDir, options);
  await mkdir(workspaces.root, { recursive: true, mode: 0o700 });
  return workspaces;
}

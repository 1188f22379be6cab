import { constants, type Stats } from 'node:fs';
import { lstat, mkdir, open, type FileHandle } from 'node:fs/promises';
import { GatewayError } from '../errors/gateway-error.js';

// Path walking inside a directory that an untrusted process can also write to, without following symlinks.
// Each step opens the next component relative to the previous directory's fd through /proc/self/fd/<fd>/<name>
// (Linux's openat without native bindings), so a link swapped in between two checks is still never followed.

const directoryFlags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** How a relative path appears in messages: quoted, control characters escaped, and bounded in length. */
export function describeRelativePath(relativePath: string): string {
  const shown = relativePath.length > 200 ? `${relativePath.slice(0, 200)}…` : relativePath;
  return JSON.stringify(shown);
}

/** Splits a workspace-relative path into its components; refuses absolute paths, `..` and NUL. */
export function splitRelativePath(relativePath: string): string[] {
  const shown = describeRelativePath(relativePath);
  if (relativePath.includes('\0')) throw new GatewayError('not_allowed', `the path ${shown} contains a NUL character`);
  if (relativePath.startsWith('/')) {
    throw new GatewayError('not_allowed', `the path ${shown} is absolute; give a path relative to the workspace`);
  }
  if (relativePath.length > 4096) throw new GatewayError('not_allowed', `the path ${shown} is too long`);
  const components = relativePath.split('/').filter((component) => component !== '' && component !== '.');
  if (components.includes('..')) {
    throw new GatewayError('not_allowed', `the path ${shown} contains "..", which could leave the workspace`);
  }
  return components;
}

/** The path that names `name` inside the directory open as `directory`, resolved by the kernel from the fd. */
export function pathAt(directory: FileHandle, name: string): string {
  return `/proc/self/fd/${directory.fd}/${name}`;
}

function hasCode(error: unknown, ...codes: string[]): boolean {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' && codes.includes(error.code);
}

/** Turns a filesystem error into a GatewayError naming only the relative path, never a host path. */
export function toWorkspaceError(error: unknown, relativePath: string, action: string): GatewayError {
  if (error instanceof GatewayError) return error;
  const shown = describeRelativePath(relativePath);
  if (hasCode(error, 'ENOENT')) return new GatewayError('not_found', `${shown} does not exist in the workspace`);
  if (hasCode(error, 'ELOOP')) {
    return new GatewayError(
      'not_allowed',
      `${shown} is a symbolic link; the gateway does not follow links in a workspace`,
    );
  }
  if (hasCode(error, 'ENOTDIR')) return new GatewayError('not_found', `a parent of ${shown} is not a directory`);
  if (hasCode(error, 'EISDIR')) return new GatewayError('not_allowed', `${shown} is a directory, not a file`);
  if (hasCode(error, 'EACCES', 'EPERM')) return new GatewayError('not_allowed', `no permission to ${action} ${shown}`);
  return new GatewayError('internal', `could not ${action} ${shown} in the workspace`, { cause: error });
}

/** lstat of one entry of an open directory; never follows the entry. */
export async function lstatAt(directory: FileHandle, name: string): Promise<Stats | undefined> {
  try {
    return await lstat(pathAt(directory, name));
  } catch (error) {
    if (hasCode(error, 'ENOENT')) return undefined;
    throw error;
  }
}

/** Refuses an entry that is a symlink or not of the expected kind, with a message naming the relative path. */
export function checkEntry(
  stats: Stats | undefined,
  expected: 'file' | 'directory',
  relativePath: string,
): asserts stats is Stats {
  const shown = describeRelativePath(relativePath);
  if (stats === undefined) throw new GatewayError('not_found', `${shown} does not exist in the workspace`);
  if (stats.isSymbolicLink()) {
    throw new GatewayError(
      'not_allowed',
      `${shown} is a symbolic link; the gateway does not follow links in a workspace`,
    );
  }
  if (expected === 'file' && !stats.isFile()) {
    throw new GatewayError('not_allowed', `${shown} is not a regular file`);
  }
  if (expected === 'directory' && !stats.isDirectory()) {
    throw new GatewayError('not_found', `${shown} is not a directory`);
  }
}

/** Opens a directory by absolute path, refusing a symlink as its last component. */
export function openDirectory(path: string): Promise<FileHandle> {
  return open(path, directoryFlags);
}

/**
 * Opens the directory `components` below `start`, one component at a time, refusing symlinks and non-directories.
 * With `createMode`, missing directories are created with that mode (set through the fd, so umask does not apply).
 * The caller closes the returned handle; `start` stays open.
 */
export async function openDirectoryAt(
  start: FileHandle,
  components: readonly string[],
  relativePath: string,
  createMode?: number,
): Promise<FileHandle> {
  // A fresh handle on `start` itself (the magic link must be followed here, so no O_NOFOLLOW).
  let current = await open(`/proc/self/fd/${start.fd}`, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    for (const [index, component] of components.entries()) {
      let created = false;
      if (createMode !== undefined) {
        try {
          await mkdir(pathAt(current, component), createMode);
          created = true;
        } catch (error) {
          if (!hasCode(error, 'EEXIST')) throw error;
        }
      }
      let next: FileHandle;
      try {
        next = await open(pathAt(current, component), directoryFlags);
      } catch (error) {
        // O_DIRECTORY | O_NOFOLLOW reports a symlink as ENOTDIR; lstat says which it was.
        if (hasCode(error, 'ENOTDIR', 'ELOOP')) {
          // Name the component that is the link, as a path relative to the workspace.
          checkEntry(await lstatAt(current, component), 'directory', components.slice(0, index + 1).join('/'));
        }
        throw error;
      }
      await current.close();
      current = next;
      if (created && createMode !== undefined) await current.chmod(createMode);
    }
    return current;
  } catch (error) {
    await current.close();
    throw toWorkspaceError(error, relativePath, 'open');
  }
}

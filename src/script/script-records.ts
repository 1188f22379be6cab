import { constants as fsConstants, createWriteStream } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import { GatewayError } from '../errors/gateway-error.js';
import { openDirectory, openDirectoryAt, pathAt } from '../sessions/confined-path.js';

/** One line of calls.jsonl. */
export interface CallRecord {
  time: string;
  tool: string;
  args: unknown;
  durationMs: number;
  isError: boolean;
  /** The error code when the gateway refused or failed the call (not the tool's own error). */
  errorCode?: string;
  summary: string;
}

/** Where a run's records go; the default writes `<workspace>/.agent/scripts/<id>/`, another may be injected. */
export interface ScriptRecords {
  /** Relative to the workspace, with a trailing slash: `.agent/scripts/<id>/`. */
  readonly detailsDir: string;
  /** stdout of the script, in full (up to the output limit). */
  readonly output: Writable;
  readonly stderr: Writable;
  appendCall(record: CallRecord): void;
  /** Flushes and closes everything; appends after this are dropped. */
  close(): Promise<void>;
}

export type OpenScriptRecords = (workspaceDir: string, scriptId: string, code: string) => Promise<ScriptRecords>;

const SCRIPT_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_APPEND } = fsConstants;

function createFile(dir: FileHandle, name: string, flags = 0): Promise<FileHandle> {
  return open(pathAt(dir, name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | flags, 0o644);
}

/**
 * The default records: gateway-side (root) writes inside a workspace a script controls, so directories
 * are walked by fd without following links (sessions/confined-path) and files created O_EXCL|O_NOFOLLOW.
 */
export const openWorkspaceRecords: OpenScriptRecords = async (workspaceDir, scriptId, code) => {
  if (!SCRIPT_ID.test(scriptId))
    throw new GatewayError('invalid_args', `invalid script id ${JSON.stringify(scriptId)}`);
  const handles: FileHandle[] = [];
  const keep = async (handle: Promise<FileHandle>): Promise<FileHandle> => {
    const opened = await handle;
    handles.push(opened);
    return opened;
  };
  try {
    const workspace = await keep(openDirectory(workspaceDir));
    const scripts = await keep(openDirectoryAt(workspace, ['.agent', 'scripts'], '.agent/scripts', 0o755));
    // A new directory per run: an id used before (or planted by a script) is refused, never reused.
    await mkdir(pathAt(scripts, scriptId), 0o755);
    const own = await keep(openDirectoryAt(scripts, [scriptId], `.agent/scripts/${scriptId}`));
    const script = await createFile(own, 'script.py');
    await script.writeFile(code);
    await script.close();
    const calls = createWriteStream('', { fd: await createFile(own, 'calls.jsonl', O_APPEND) });
    const output = createWriteStream('', { fd: await createFile(own, 'output.txt', O_APPEND) });
    const stderr = createWriteStream('', { fd: await createFile(own, 'stderr.txt', O_APPEND) });
    await Promise.all(handles.map((handle) => handle.close()));
    // A full disk loses records but must not crash the gateway; the run itself goes on.
    for (const stream of [calls, output, stderr]) stream.on('error', () => undefined);
    let closed = false;
    return {
      detailsDir: `.agent/scripts/${scriptId}/`,
      output,
      stderr,
      appendCall(record) {
        if (!closed) calls.write(`${JSON.stringify(record)}\n`);
      },
      async close() {
        if (closed) return;
        closed = true;
        const streams = [calls, output, stderr];
        for (const stream of streams) stream.end();
        await Promise.all(streams.map((stream) => finished(stream).catch(() => undefined)));
      },
    };
  } catch (error) {
    await Promise.all(handles.map((handle) => handle.close().catch(() => undefined)));
    if (error instanceof GatewayError) throw error;
    throw new GatewayError('conflict', `cannot create the records of script ${scriptId} in the workspace`, {
      cause: error,
    });
  }
};

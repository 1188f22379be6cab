import { execFile } from 'node:child_process';
import { createSerialQueue } from '../sandbox/serial-queue.js';

/**
 * Disk usage of `dir` in bytes, by `du`: it never follows symlinks and walks with openat, so a
 * script swapping a directory for a link cannot steer the walk out of the workspace.
 */
export function measureDiskUsage(dir: string): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      '/usr/bin/du',
      ['-s', '-x', '-P', '-B1', '--', dir],
      { env: {}, maxBuffer: 1024 * 1024 },
      (error, stdout) => {
        const bytes = Number(/^(\d+)/.exec(stdout)?.[1]);
        // du exits 1 when a file vanished mid-walk; its total is still the best there is.
        if (Number.isFinite(bytes)) resolve(bytes);
        else reject(error ?? new Error(`du printed no size for ${dir}`));
      },
    );
  });
}

/**
 * One `du` at a time for every running script, with a pause between walks: fifty scripts must not fork
 * fifty walks each second on the gateway's event loop. A directory already waiting shares that walk.
 */
export function createSerialDiskUsage(
  measure: (dir: string) => Promise<number> = measureDiskUsage,
  gapMs = 20,
): (dir: string) => Promise<number> {
  const waiting = new Map<string, Promise<number>>();
  const serial = createSerialQueue(gapMs);
  return (dir) => {
    const queued = waiting.get(dir);
    if (queued !== undefined) return queued;
    const settled = serial(() => measure(dir)).finally(() => waiting.delete(dir));
    waiting.set(dir, settled);
    return settled;
  };
}

export interface WorkspaceWatchdogOptions {
  dir: string;
  maxBytes: number;
  intervalMs: number;
  onExceeded: (bytes: number) => void;
  measure?: (dir: string) => Promise<number>;
}

/** Measures the workspace every `intervalMs` (never two walks at once) and reports once when it is over `maxBytes`. */
export function startWorkspaceWatchdog(options: WorkspaceWatchdogOptions): () => void {
  const measure = options.measure ?? measureDiskUsage;
  let stopped = false;
  let walking = false;
  const timer = setInterval(() => {
    if (walking || stopped) return;
    walking = true;
    measure(options.dir)
      .then((bytes) => {
        if (!stopped && bytes > options.maxBytes) {
          stopped = true;
          options.onExceeded(bytes);
        }
      })
      .catch(() => undefined) // a failed walk is retried at the next tick
      .finally(() => {
        walking = false;
      });
  }, options.intervalMs);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

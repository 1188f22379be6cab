import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GatewayError } from '../errors/gateway-error.js';

export interface SandboxUser {
  uid: number;
  gid: number;
}

export interface SandboxUidPoolOptions {
  /** First uid (and gid) handed out; far above the range distributions assign to real users. */
  base?: number;
  /** How many sandboxes may run at the same time. */
  size?: number;
  /** Where host-wide leases live (one file per uid); default /run/toolgate/sandbox-uids, else the temp dir. */
  leaseDir?: string;
}

/** The start time of a process (field 22 of /proc/PID/stat), so a reused pid is not taken for the old owner. */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function defaultLeaseDir(): string {
  for (const dir of ['/run/toolgate/sandbox-uids', join(tmpdir(), 'toolgate-sandbox-uids')]) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      return dir;
    } catch {
      // try the next place
    }
  }
  throw new GatewayError('sandbox_unavailable', 'no writable directory for sandbox uid leases');
}

/**
 * Hands out one unprivileged uid per running sandbox, because RLIMIT_NPROC counts every process
 * of a host uid: two sandboxes sharing a uid would share (and could exhaust) one process budget.
 * A uid is leased host-wide with an exclusive lease file, so two gateways on one machine (or
 * `toolgate run` next to `serve`) never share a uid — and so never end each other's processes.
 */
export class SandboxUidPool {
  readonly #base: number;
  readonly #size: number;
  readonly #leaseDir: string;
  readonly #inUse = new Set<number>();
  readonly #owner = `${process.pid} ${processStart(process.pid) ?? '?'}`;

  constructor(options: SandboxUidPoolOptions = {}) {
    this.#base = options.base ?? 61_000;
    this.#size = options.size ?? 64;
    if (!Number.isSafeInteger(this.#base) || this.#base < 1000) throw new TypeError('base must be an integer >= 1000');
    if (!Number.isSafeInteger(this.#size) || this.#size < 1) throw new TypeError('size must be a positive integer');
    this.#leaseDir = options.leaseDir ?? defaultLeaseDir();
  }

  /** Takes the lowest uid free on this host; throws `limit` when every slot is busy. */
  acquire(): SandboxUser {
    for (let slot = 0; slot < this.#size; slot++) {
      const uid = this.#base + slot;
      if (!this.#inUse.has(uid) && this.#lease(uid)) {
        this.#inUse.add(uid);
        return { uid, gid: uid };
      }
    }
    throw new GatewayError('limit', `too many sandboxes running at once (${this.#size})`);
  }

  release(user: SandboxUser): void {
    if (!this.#inUse.delete(user.uid)) return;
    try {
      unlinkSync(this.#leasePath(user.uid));
    } catch {
      // already gone
    }
  }

  get inUse(): number {
    return this.#inUse.size;
  }

  #leasePath(uid: number): string {
    return join(this.#leaseDir, String(uid));
  }

  /** Creates the lease exclusively; a lease whose owner process is gone is stale and taken over. */
  #lease(uid: number): boolean {
    const path = this.#leasePath(uid);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(path, 'wx', 0o600);
        writeSync(fd, this.#owner);
        closeSync(fd);
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      let owner = '';
      try {
        owner = readFileSync(path, 'utf8');
      } catch {
        continue;
      }
      // An empty lease is one being written right now by its new owner.
      if (owner === '') return false;
      const [pid, start] = owner.split(' ');
      if (pid !== undefined && start !== undefined && processStart(Number(pid)) === start) return false;
      try {
        unlinkSync(path);
      } catch {
        // another process took it over first; the next attempt decides
      }
    }
    return false;
  }
}

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
}

/**
 * Hands out one unprivileged uid per running sandbox, because RLIMIT_NPROC counts every process
 * of a host uid: two sandboxes sharing a uid would share (and could exhaust) one process budget.
 */
export class SandboxUidPool {
  readonly #base: number;
  readonly #size: number;
  readonly #inUse = new Set<number>();

  constructor(options: SandboxUidPoolOptions = {}) {
    this.#base = options.base ?? 61_000;
    this.#size = options.size ?? 64;
    if (!Number.isSafeInteger(this.#base) || this.#base < 1000) throw new TypeError('base must be an integer >= 1000');
    if (!Number.isSafeInteger(this.#size) || this.#size < 1) throw new TypeError('size must be a positive integer');
  }

  /** Takes the lowest free uid; throws `limit` when every slot is busy. */
  acquire(): SandboxUser {
    for (let slot = 0; slot < this.#size; slot++) {
      const uid = this.#base + slot;
      if (!this.#inUse.has(uid)) {
        this.#inUse.add(uid);
        return { uid, gid: uid };
      }
    }
    throw new GatewayError('limit', `too many sandboxes running at once (${this.#size})`);
  }

  release(user: SandboxUser): void {
    this.#inUse.delete(user.uid);
  }

  get inUse(): number {
    return this.#inUse.size;
  }
}

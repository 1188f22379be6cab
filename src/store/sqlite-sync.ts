import type { Store } from './store.js';

/** The synchronous shape of some Store methods: better-sqlite3 is synchronous, and the store wraps it once. */
export type SyncMethods<K extends keyof Store> = {
  [M in K]: Store[M] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : never;
};

/** Runs a synchronous method so that a throw becomes a rejected promise, as an async database would report it. */
export function toAsync<A extends unknown[], R>(method: (...args: A) => R): (...args: A) => Promise<R> {
  return (...args) => {
    try {
      return Promise.resolve(method(...args));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  };
}

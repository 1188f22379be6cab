import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SandboxUidPool } from './sandbox-uid-pool.js';

let leaseDir: string;
beforeEach(() => {
  leaseDir = mkdtempSync(join(tmpdir(), 'toolgate-leases-'));
});
afterEach(() => {
  rmSync(leaseDir, { recursive: true, force: true });
});

describe('SandboxUidPool', () => {
  it('two pools over the same range never hand out the same uid', () => {
    const first = new SandboxUidPool({ base: 70_000, size: 2, leaseDir });
    const second = new SandboxUidPool({ base: 70_000, size: 2, leaseDir });
    const a = first.acquire();
    const b = second.acquire();
    expect(a.uid).toBe(70_000);
    expect(b.uid).toBe(70_001);
    expect(() => first.acquire()).toThrow(/too many sandboxes/);
    second.release(b);
    expect(first.acquire().uid).toBe(70_001);
  });

  it('takes over a lease whose owner process is gone, and keeps one whose owner lives', () => {
    writeFileSync(join(leaseDir, '70100'), '999999999 12345');
    writeFileSync(
      join(leaseDir, '70101'),
      `${process.pid} ${readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ')[19] ?? ''}`,
    );
    const pool = new SandboxUidPool({ base: 70_100, size: 2, leaseDir });
    expect(pool.acquire().uid).toBe(70_100);
    expect(() => pool.acquire()).toThrow(/too many sandboxes/);
  });

  it('release removes the lease file', () => {
    const pool = new SandboxUidPool({ base: 70_200, size: 1, leaseDir });
    const user = pool.acquire();
    expect(readFileSync(join(leaseDir, '70200'), 'utf8')).toContain(String(process.pid));
    pool.release(user);
    expect(() => readFileSync(join(leaseDir, '70200'))).toThrow();
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteDatabase } from './sqlite-store.js';
import { openSqliteStore, type Store } from './store.js';
import type { CallFilter } from './store-records.js';

const rowCount = 100_000;
const statuses = ['ok', 'ok', 'ok', 'error', 'denied', 'timeout'] as const;

let dir: string;
let store: Store;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'toolgate-audit-'));
  const path = join(dir, 'toolgate.db');
  const db = openSqliteDatabase(path);
  const insert = db.prepare(
    `INSERT INTO gateway_call (started_at, profile, session_id, kind, tool, arguments_json, status, duration_ms,
       result_summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  db.transaction(() => {
    for (let index = 0; index < rowCount; index += 1) {
      insert.run(
        1_700_000_000_000 + index * 1000,
        `profile-${index % 4}`,
        `session-${index % 500}`,
        index % 50 === 0 ? 'script' : 'call',
        `service-${index % 7}__tool-${index % 13}`,
        JSON.stringify({ device: `d-${index % 500}` }),
        statuses[index % statuses.length],
        index % 900,
        'ok',
      );
    }
  })();
  db.close();
  store = openSqliteStore(path);
}, 120_000);

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('audit queries over 100,000 rows', () => {
  const filters: CallFilter[] = [
    {},
    { profile: 'profile-1' },
    { sessionId: 'session-42' },
    { tool: 'service-3__tool-5' },
    { status: 'error', profile: 'profile-1' },
    { kind: 'script' },
    { since: 1_700_000_000_000 + 10_000_000, until: 1_700_000_000_000 + 20_000_000 },
    { since: 1_700_000_000_000 + 90_000_000, profile: 'profile-3', status: 'error' },
    { sessionId: 'session-7', before: 50_000 },
  ];

  it.each(filters)('answers a filtered page quickly: %j', async (filter) => {
    await store.queryCalls(filter);
    const started = performance.now();
    const page = await store.queryCalls({ ...filter, limit: 100 });
    const elapsed = performance.now() - started;
    expect(page.rows.length).toBeGreaterThan(0);
    expect(page.rows.every((row, index) => index === 0 || row.id < (page.rows[index - 1]?.id ?? 0))).toBe(true);
    // The target is well under 50 ms; the bound is loose so a busy CI machine does not make it flaky.
    expect(elapsed).toBeLessThan(200);
  });

  it('answers quickly even when a combination of filters matches nothing (a full index scan)', async () => {
    const started = performance.now();
    const page = await store.queryCalls({ status: 'timeout', profile: 'profile-2' });
    const elapsed = performance.now() - started;
    expect(page).toEqual({ rows: [] });
    expect(elapsed).toBeLessThan(200);
  });

  it('walks a filtered result to the end by cursor', async () => {
    let before: number | undefined;
    let total = 0;
    do {
      const page = await store.queryCalls({
        sessionId: 'session-42',
        limit: 50,
        ...(before === undefined ? {} : { before }),
      });
      total += page.rows.length;
      before = page.nextCursor;
    } while (before !== undefined);
    expect(total).toBe(rowCount / 500);
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrations } from './migrations.js';
import { openSqliteDatabase } from './sqlite-store.js';
import { openSqliteStore, type Store } from './store.js';
import { createInitialDelivery, type NewApproval, type NewBackgroundCall } from './store-records.js';

let dir: string;
let path: string;
let store: Store;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'toolgate-store-'));
  path = join(dir, 'toolgate.db');
  store = openSqliteStore(path);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function approval(id: string, overrides: Partial<NewApproval> = {}): NewApproval {
  return {
    id,
    sessionId: 's1',
    profile: 'dev',
    kind: 'call',
    tools: ['fleet__reboot'],
    arguments: { device: 'd-1' },
    script: null,
    definitionHash: 'h1',
    createdAt: 1000,
    expiresAt: 601_000,
    description: null,
    options: ['allow_once', 'allow_session', 'deny'],
    ...overrides,
  };
}

function background(id: string, overrides: Partial<NewBackgroundCall> = {}): NewBackgroundCall {
  return {
    id,
    sessionId: 's1',
    profile: 'dev',
    kind: 'call',
    tool: 'fleet__firmware_update',
    scriptId: null,
    callId: null,
    startedAt: 1000,
    delivery: createInitialDelivery({ webhook: true }),
    ...overrides,
  };
}

describe('opening', () => {
  it('turns on WAL and foreign keys and applies each migration once, also on reopen', async () => {
    await store.upsertSession({ id: 's1', profile: 'dev', at: 1 });
    await store.close();
    store = openSqliteStore(path);
    expect(await store.getSession('s1')).toMatchObject({ id: 's1' });

    const db = openSqliteDatabase(path);
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
      const versions = db.prepare('SELECT version FROM schema_version ORDER BY version').pluck().all();
      expect(versions).toEqual(migrations.map((migration) => migration.version));
    } finally {
      db.close();
    }
  });
});

describe('sessions and allowances', () => {
  it('inserts, touches and lists sessions newest activity first', async () => {
    const first = await store.upsertSession({ id: 's1', profile: 'dev', client: 'claude-code/2.1', at: 100 });
    expect(first).toEqual({ id: 's1', profile: 'dev', client: 'claude-code/2.1', startedAt: 100, lastActivityAt: 100 });
    await store.upsertSession({ id: 's2', profile: 'ops', at: 200 });
    const touched = await store.upsertSession({ id: 's1', profile: 'dev', at: 300 });
    expect(touched).toEqual({ ...first, lastActivityAt: 300 });
    expect((await store.listSessions()).map((session) => session.id)).toEqual(['s1', 's2']);
    expect(await store.listSessions({ limit: 1 })).toHaveLength(1);
    expect(await store.getSession('nope')).toBeUndefined();
  });

  it('grants, re-grants and revokes an allowance, and needs the session to exist', async () => {
    await store.upsertSession({ id: 's1', profile: 'dev', at: 1 });
    expect(await store.getAllowance('s1', 'fleet__set_mode')).toBeUndefined();
    await store.grantAllowance('s1', 'fleet__set_mode', 'h1', 10);
    await store.grantAllowance('s1', 'fleet__set_mode', 'h2', 20);
    expect(await store.getAllowance('s1', 'fleet__set_mode')).toEqual({ definitionHash: 'h2', grantedAt: 20 });
    await store.revokeAllowance('s1', 'fleet__set_mode');
    expect(await store.getAllowance('s1', 'fleet__set_mode')).toBeUndefined();
    await expect(store.grantAllowance('unknown', 'fleet__set_mode', 'h1', 10)).rejects.toThrow(/FOREIGN KEY/);
  });
});

describe('audit', () => {
  it('records a call, completes it and reads it back parsed', async () => {
    const id = await store.insertCall({
      startedAt: 1000,
      profile: 'dev',
      sessionId: 's1',
      kind: 'script',
      tool: 'run_script',
      arguments: { tools: ['fleet__get_device_status'] },
    });
    expect(await store.getCall(id)).toMatchObject({
      status: 'running',
      durationMs: null,
      approval: null,
      script: null,
    });
    const script = {
      description: 'status of all devices',
      calls: 500,
      failures: 3,
      callsPerTool: { fleet__get_device_status: 500 },
      exitCode: 0,
      detailsDir: '.agent/scripts/sc_1',
      content: 'print(1)',
    };
    const approvalRecord = { decision: 'allow_once', decidedBy: 'alice', channel: 'console', waitedMs: 1200 } as const;
    await store.completeCall(id, {
      status: 'ok',
      durationMs: 4200,
      resultSummary: '497 ok, 3 failed',
      approval: approvalRecord,
      script,
    });
    expect(await store.getCall(id)).toEqual({
      id,
      startedAt: 1000,
      profile: 'dev',
      sessionId: 's1',
      kind: 'script',
      tool: 'run_script',
      arguments: { tools: ['fleet__get_device_status'] },
      status: 'ok',
      durationMs: 4200,
      resultSummary: '497 ok, 3 failed',
      error: null,
      approval: approvalRecord,
      script,
      backgroundId: null,
    });
    await store.updateCall(id, { backgroundId: 'bg_1', status: 'background' });
    expect(await store.getCall(id)).toMatchObject({ backgroundId: 'bg_1', status: 'background', durationMs: 4200 });
    await expect(store.updateCall(999, { status: 'ok' })).rejects.toMatchObject({ code: 'not_found' });
    expect(await store.getCall(999)).toBeUndefined();
  });

  it('pages with a keyset cursor without duplicates or gaps, under each filter', async () => {
    const ids: number[] = [];
    for (let index = 0; index < 23; index += 1) {
      ids.push(
        await store.insertCall({
          startedAt: 1000 + index,
          profile: index % 2 === 0 ? 'dev' : 'ops',
          sessionId: `s${index % 3}`,
          kind: 'call',
          tool: index % 5 === 0 ? 'fleet__reboot' : 'fleet__get_device_status',
          arguments: { index },
        }),
      );
    }
    const seen: number[] = [];
    let before: number | undefined;
    let pages = 0;
    do {
      const page = await store.queryCalls({ limit: 5, ...(before === undefined ? {} : { before }) });
      seen.push(...page.rows.map((row) => row.id));
      before = page.nextCursor;
      pages += 1;
    } while (before !== undefined);
    expect(pages).toBe(5);
    expect(seen).toEqual([...ids].reverse());

    const dev = await store.queryCalls({ profile: 'dev', tool: 'fleet__reboot' });
    expect(dev.rows.map((row) => row.arguments)).toEqual([{ index: 20 }, { index: 10 }, { index: 0 }]);
    expect(dev.nextCursor).toBeUndefined();
    const window = await store.queryCalls({ since: 1005, until: 1008, sessionId: 's0' });
    expect(window.rows.map((row) => row.startedAt)).toEqual([1006]);
    expect((await store.queryCalls({ status: 'running', kind: 'call', limit: 1000 })).rows).toHaveLength(23);
    expect((await store.queryCalls({ status: 'ok' })).rows).toHaveLength(0);
  });
});

describe('approvals', () => {
  beforeEach(async () => {
    await store.upsertSession({ id: 's1', profile: 'dev', at: 1 });
    await store.upsertSession({ id: 's2', profile: 'dev', at: 1 });
  });

  it('stores and lists approvals by status and session', async () => {
    await store.insertApproval(approval('apr_a'));
    await store.insertApproval(
      approval('apr_b', { sessionId: 's2', kind: 'script', arguments: null, script: 'print(1)', createdAt: 2000 }),
    );
    expect(await store.getApproval('apr_a')).toEqual({
      ...approval('apr_a'),
      decidedAt: null,
      decision: null,
      decidedBy: null,
      channel: null,
    });
    expect((await store.listApprovals({ status: 'pending' })).map((row) => row.id)).toEqual(['apr_b', 'apr_a']);
    expect((await store.listApprovals({ status: 'all', sessionId: 's2' })).map((row) => row.id)).toEqual(['apr_b']);
    await store.decideApproval('apr_b', { decision: 'deny', decidedBy: 'bob', channel: 'cli', at: 3000 });
    expect((await store.listApprovals({ status: 'pending' })).map((row) => row.id)).toEqual(['apr_a']);
    expect((await store.listApprovals({ status: 'decided' })).map((row) => row.id)).toEqual(['apr_b']);
    expect(await store.getApproval('apr_x')).toBeUndefined();
  });

  it('lets the first decision win and reports later ones as already decided', async () => {
    await store.insertApproval(approval('apr_a'));
    const [first, second] = await Promise.all([
      store.decideApproval('apr_a', { decision: 'allow_session', decidedBy: 'alice', channel: 'console', at: 5 }),
      store.decideApproval('apr_a', { decision: 'expired', decidedBy: 'gateway', channel: 'timeout', at: 6 }),
    ]);
    expect(first).toMatchObject({
      ok: true,
      approval: { decision: 'allow_session', decidedBy: 'alice', decidedAt: 5 },
    });
    expect(second).toMatchObject({ ok: false, reason: 'already_decided', approval: { decision: 'allow_session' } });
    expect(await store.decideApproval('apr_x', { decision: 'deny', decidedBy: 'x', channel: 'api', at: 7 })).toEqual({
      ok: false,
      reason: 'not_found',
    });
  });
});

describe('background calls', () => {
  beforeEach(async () => {
    await store.upsertSession({ id: 's1', profile: 'dev', at: 1 });
  });

  it('finishes a running call once and keeps its result and delivery state', async () => {
    const callId = await store.insertCall({
      startedAt: 1000,
      profile: 'dev',
      sessionId: 's1',
      kind: 'call',
      tool: 'fleet__firmware_update',
      arguments: {},
    });
    await store.insertBackground(background('bg_1', { callId }));
    expect(await store.getBackground('bg_1')).toMatchObject({ status: 'running', result: undefined, callId });
    const result = { text: 'done', structured: { updated: 3 }, is_error: false };
    expect(await store.finishBackground('bg_1', { status: 'ok', finishedAt: 2000, result })).toBe(true);
    expect(await store.finishBackground('bg_1', { status: 'cancelled', finishedAt: 2001 })).toBe(false);
    const delivery = { ...createInitialDelivery({ webhook: true }), nextResult: 'delivered' as const };
    delivery.webhook = { state: 'failed', attempts: 3, lastError: 'HTTP 500' };
    await store.updateDelivery('bg_1', delivery);
    expect(await store.getBackground('bg_1')).toEqual({
      ...background('bg_1', { callId }),
      status: 'ok',
      finishedAt: 2000,
      result,
      error: null,
      delivery,
    });
    await expect(store.updateDelivery('bg_x', delivery)).rejects.toMatchObject({ code: 'not_found' });
    expect(await store.getBackground('bg_x')).toBeUndefined();
  });

  it('lists by session and status, and marks every running call interrupted after a restart', async () => {
    await store.upsertSession({ id: 's2', profile: 'dev', at: 1 });
    await store.insertBackground(background('bg_1', { startedAt: 1 }));
    await store.insertBackground(
      background('bg_2', { startedAt: 2, kind: 'script', tool: 'run_script', scriptId: 'sc_1' }),
    );
    await store.insertBackground(background('bg_3', { startedAt: 3, sessionId: 's2' }));
    await store.finishBackground('bg_1', { status: 'error', finishedAt: 5, error: 'upstream failed' });
    expect((await store.listBackground()).map((row) => row.id)).toEqual(['bg_3', 'bg_2', 'bg_1']);
    expect((await store.listBackground({ sessionId: 's1', status: 'running' })).map((row) => row.id)).toEqual(['bg_2']);

    await store.close();
    store = openSqliteStore(path);
    const interrupted = await store.markRunningInterrupted(9);
    expect(interrupted.map((row) => [row.id, row.status, row.finishedAt, row.error]).sort()).toEqual([
      ['bg_2', 'interrupted', 9, 'interrupted by a gateway restart'],
      ['bg_3', 'interrupted', 9, 'interrupted by a gateway restart'],
    ]);
    expect(await store.getBackground('bg_1')).toMatchObject({ status: 'error', error: 'upstream failed' });
    expect(await store.markRunningInterrupted(10)).toEqual([]);
  });
});

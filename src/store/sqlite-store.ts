import Database from 'better-sqlite3';
import { z } from 'zod';
import { createApprovalMethods } from './sqlite-approvals.js';
import { createBackgroundMethods } from './sqlite-background.js';
import { createCallMethods } from './sqlite-calls.js';
import { clampLimit, parseRow } from './sqlite-rows.js';
import { toAsync, type SyncMethods } from './sqlite-sync.js';
import { applyMigrations } from './migrations.js';
import type { Store } from './store.js';
import type { Session } from './store-records.js';

const sessionRowSchema = z.object({
  id: z.string(),
  profile: z.string(),
  client: z.string().nullable(),
  started_at: z.number(),
  last_activity_at: z.number(),
});

function toSession(row: unknown): Session {
  const parsed = parseRow(sessionRowSchema, row, 'sessions');
  return {
    id: parsed.id,
    profile: parsed.profile,
    client: parsed.client,
    startedAt: parsed.started_at,
    lastActivityAt: parsed.last_activity_at,
  };
}

const allowanceRowSchema = z.object({ definition_hash: z.string(), granted_at: z.number() });

type SessionMethods = SyncMethods<
  'upsertSession' | 'getSession' | 'listSessions' | 'grantAllowance' | 'getAllowance' | 'revokeAllowance'
>;

function createSessionMethods(db: Database.Database): SessionMethods {
  // ON CONFLICT … DO UPDATE is spelled the same in PostgreSQL; the profile of an existing session never changes.
  const upsert = db.prepare(
    `INSERT INTO sessions (id, profile, client, started_at, last_activity_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET
       last_activity_at = MAX(sessions.last_activity_at, excluded.last_activity_at),
       client = COALESCE(excluded.client, sessions.client)`,
  );
  const selectSession = db.prepare('SELECT * FROM sessions WHERE id = ?');
  const selectSessions = db.prepare('SELECT * FROM sessions ORDER BY last_activity_at DESC, id LIMIT ?');
  const grant = db.prepare(
    `INSERT INTO session_allowances (session_id, tool, definition_hash, granted_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (session_id, tool) DO UPDATE SET definition_hash = excluded.definition_hash,
       granted_at = excluded.granted_at`,
  );
  const selectAllowance = db.prepare(
    'SELECT definition_hash, granted_at FROM session_allowances WHERE session_id = ? AND tool = ?',
  );
  const revoke = db.prepare('DELETE FROM session_allowances WHERE session_id = ? AND tool = ?');

  const getSession = (id: string): Session | undefined => {
    const row = selectSession.get(id);
    return row === undefined ? undefined : toSession(row);
  };

  return {
    upsertSession: db.transaction((input: { id: string; profile: string; client?: string | null; at: number }) => {
      upsert.run(input.id, input.profile, input.client ?? null, input.at, input.at);
      const session = getSession(input.id);
      if (session === undefined) throw new Error(`session ${input.id} vanished right after its upsert`);
      return session;
    }),
    getSession,
    listSessions: (options = {}) => selectSessions.all(clampLimit(options.limit, 100, 1000)).map(toSession),
    grantAllowance: (sessionId, tool, definitionHash, at) => {
      grant.run(sessionId, tool, definitionHash, at);
    },
    getAllowance: (sessionId, tool) => {
      const row = selectAllowance.get(sessionId, tool);
      if (row === undefined) return undefined;
      const parsed = parseRow(allowanceRowSchema, row, 'session_allowances');
      return { definitionHash: parsed.definition_hash, grantedAt: parsed.granted_at };
    },
    revokeAllowance: (sessionId, tool) => {
      revoke.run(sessionId, tool);
    },
  };
}

/** Opens the database file with the settings every connection needs, then migrates it. */
export function openSqliteDatabase(path: string): Database.Database {
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    // Other processes (the CLI, a second gateway) may hold the write lock briefly; wait instead of failing.
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    db.pragma('synchronous = NORMAL');
    applyMigrations(db);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

export function createSqliteStore(path: string): Store {
  const db = openSqliteDatabase(path);
  const sessions = createSessionMethods(db);
  const calls = createCallMethods(db);
  const approvals = createApprovalMethods(db);
  const background = createBackgroundMethods(db);
  return {
    upsertSession: toAsync(sessions.upsertSession),
    getSession: toAsync(sessions.getSession),
    listSessions: toAsync(sessions.listSessions),
    insertCall: toAsync(calls.insertCall),
    completeCall: toAsync(calls.completeCall),
    updateCall: toAsync(calls.updateCall),
    getCall: toAsync(calls.getCall),
    queryCalls: toAsync(calls.queryCalls),
    insertApproval: toAsync(approvals.insertApproval),
    getApproval: toAsync(approvals.getApproval),
    listApprovals: toAsync(approvals.listApprovals),
    decideApproval: toAsync(approvals.decideApproval),
    grantAllowance: toAsync(sessions.grantAllowance),
    getAllowance: toAsync(sessions.getAllowance),
    revokeAllowance: toAsync(sessions.revokeAllowance),
    insertBackground: toAsync(background.insertBackground),
    getBackground: toAsync(background.getBackground),
    listBackground: toAsync(background.listBackground),
    finishBackground: toAsync(background.finishBackground),
    updateDelivery: toAsync(background.updateDelivery),
    markRunningInterrupted: toAsync(background.markRunningInterrupted),
    close: toAsync(() => {
      if (!db.open) return;
      // Lets SQLite refresh its planner statistics for the audit indexes, cheaply, as its documentation advises.
      db.pragma('optimize');
      db.close();
    }),
  };
}

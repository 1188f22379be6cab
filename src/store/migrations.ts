import type Database from 'better-sqlite3';

export interface Migration {
  version: number;
  description: string;
  statements: readonly string[];
}

/** Append only: a released migration is never edited, a change is a new entry. */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    description: 'sessions, audit, approvals, allowances, background calls',
    statements: [
      `CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        profile TEXT NOT NULL,
        client TEXT,
        started_at INTEGER NOT NULL,
        last_activity_at INTEGER NOT NULL
      )`,
      `CREATE INDEX sessions_last_activity ON sessions (last_activity_at DESC, id)`,
      `CREATE TABLE gateway_call (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        started_at INTEGER NOT NULL,
        profile TEXT NOT NULL,
        session_id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('call', 'script')),
        tool TEXT NOT NULL,
        arguments_json TEXT NOT NULL,
        status TEXT NOT NULL,
        duration_ms INTEGER,
        result_summary TEXT,
        error TEXT,
        approval_json TEXT,
        script_json TEXT,
        background_id TEXT
      )`,
      // One index per audit filter, each ending in id so a filtered page is an index range scan in id order.
      `CREATE INDEX gateway_call_started ON gateway_call (started_at, id)`,
      `CREATE INDEX gateway_call_profile ON gateway_call (profile, id)`,
      `CREATE INDEX gateway_call_session ON gateway_call (session_id, id)`,
      `CREATE INDEX gateway_call_tool ON gateway_call (tool, id)`,
      `CREATE INDEX gateway_call_status ON gateway_call (status, id)`,
      `CREATE INDEX gateway_call_kind ON gateway_call (kind, id)`,
      `CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        profile TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('call', 'script')),
        tools_json TEXT NOT NULL,
        arguments_json TEXT,
        script TEXT,
        definition_hash TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        decided_at INTEGER,
        decision TEXT,
        decided_by TEXT,
        channel TEXT,
        description TEXT
      )`,
      `CREATE INDEX approvals_session ON approvals (session_id, created_at)`,
      `CREATE INDEX approvals_pending ON approvals (created_at) WHERE decision IS NULL`,
      `CREATE TABLE session_allowances (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        tool TEXT NOT NULL,
        definition_hash TEXT NOT NULL,
        granted_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, tool)
      )`,
      `CREATE TABLE background_calls (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        profile TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('call', 'script')),
        tool TEXT NOT NULL,
        script_id TEXT,
        call_id INTEGER REFERENCES gateway_call (id),
        started_at INTEGER NOT NULL,
        status TEXT NOT NULL,
        finished_at INTEGER,
        result_json TEXT,
        error TEXT,
        delivery_json TEXT NOT NULL
      )`,
      `CREATE INDEX background_calls_session ON background_calls (session_id, started_at)`,
      `CREATE INDEX background_calls_status ON background_calls (status, started_at)`,
    ],
  },
  {
    version: 2,
    description: 'the decisions an approval offers (allow for this session only for write calls)',
    statements: [`ALTER TABLE approvals ADD COLUMN options_json TEXT NOT NULL DEFAULT '["allow_once","deny"]'`],
  },
];

/** Applies every migration newer than the database, each in its own transaction; returns the versions applied. */
export function applyMigrations(db: Database.Database, list: readonly Migration[] = migrations): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  )`);
  const readVersion = db.prepare<[], { version: number | null }>('SELECT MAX(version) AS version FROM schema_version');
  const record = db.prepare('INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)');
  const applied: number[] = [];
  for (const migration of [...list].sort((a, b) => a.version - b.version)) {
    const apply = db.transaction(() => {
      // Re-read inside the write lock so two processes opening the same file apply a migration only once.
      const current = readVersion.get()?.version ?? 0;
      if (migration.version <= current) return false;
      for (const statement of migration.statements) db.exec(statement);
      record.run(migration.version, migration.description, Date.now());
      return true;
    });
    if (apply.immediate()) applied.push(migration.version);
  }
  return applied;
}

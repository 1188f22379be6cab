import type Database from 'better-sqlite3';
import { z } from 'zod';
import { GatewayError } from '../errors/gateway-error.js';
import { clampLimit, parseJsonColumn, parseRow, toJsonColumn } from './sqlite-rows.js';
import type { SyncMethods } from './sqlite-sync.js';
import {
  callApprovalSchema,
  callKindSchema,
  callScriptSchema,
  callStatusSchema,
  jsonObjectSchema,
  type CallFilter,
  type CallRecord,
  type CallUpdate,
} from './store-records.js';

const callRowSchema = z.object({
  id: z.number(),
  started_at: z.number(),
  profile: z.string(),
  session_id: z.string(),
  kind: callKindSchema,
  tool: z.string(),
  arguments_json: z.string(),
  status: callStatusSchema,
  duration_ms: z.number().nullable(),
  result_summary: z.string().nullable(),
  error: z.string().nullable(),
  approval_json: z.string().nullable(),
  script_json: z.string().nullable(),
  background_id: z.string().nullable(),
});

function toCallRecord(row: unknown): CallRecord {
  const parsed = parseRow(callRowSchema, row, 'gateway_call');
  return {
    id: parsed.id,
    startedAt: parsed.started_at,
    profile: parsed.profile,
    sessionId: parsed.session_id,
    kind: parsed.kind,
    tool: parsed.tool,
    arguments: parseJsonColumn(jsonObjectSchema, parsed.arguments_json, 'gateway_call.arguments_json') ?? {},
    status: parsed.status,
    durationMs: parsed.duration_ms,
    resultSummary: parsed.result_summary,
    error: parsed.error,
    approval: parseJsonColumn(callApprovalSchema, parsed.approval_json, 'gateway_call.approval_json'),
    script: parseJsonColumn(callScriptSchema, parsed.script_json, 'gateway_call.script_json'),
    backgroundId: parsed.background_id,
  };
}

/** Maps each updatable field to its column and its SQL value; only keys present in the update are written. */
function updateAssignments(update: CallUpdate): { columns: string[]; values: (string | number | null)[] } {
  const columns: string[] = [];
  const values: (string | number | null)[] = [];
  const set = (column: string, value: string | number | null): void => {
    columns.push(`${column} = ?`);
    values.push(value);
  };
  if (update.status !== undefined) set('status', update.status);
  if (update.durationMs !== undefined) set('duration_ms', update.durationMs);
  if (update.resultSummary !== undefined) set('result_summary', update.resultSummary);
  if (update.error !== undefined) set('error', update.error);
  if (update.approval !== undefined) set('approval_json', toJsonColumn(update.approval));
  if (update.script !== undefined) set('script_json', toJsonColumn(update.script));
  if (update.backgroundId !== undefined) set('background_id', update.backgroundId);
  return { columns, values };
}

/** The WHERE clause of an audit query; every condition is an equality or range that one of the indexes serves. */
function filterConditions(filter: CallFilter): { where: string; params: (string | number)[] } {
  const conditions: string[] = [];
  const params: (string | number)[] = [];
  const add = (condition: string, value: string | number): void => {
    conditions.push(condition);
    params.push(value);
  };
  if (filter.since !== undefined) add('started_at >= ?', filter.since);
  if (filter.until !== undefined) add('started_at < ?', filter.until);
  if (filter.profile !== undefined) add('profile = ?', filter.profile);
  if (filter.sessionId !== undefined) add('session_id = ?', filter.sessionId);
  if (filter.tool !== undefined) add('tool = ?', filter.tool);
  if (filter.status !== undefined) add('status = ?', filter.status);
  if (filter.kind !== undefined) add('kind = ?', filter.kind);
  if (filter.before !== undefined) add('id < ?', filter.before);
  return { where: conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`, params };
}

type CallMethods = SyncMethods<'insertCall' | 'completeCall' | 'updateCall' | 'getCall' | 'queryCalls'>;

export function createCallMethods(db: Database.Database): CallMethods {
  const insert = db.prepare(
    `INSERT INTO gateway_call (started_at, profile, session_id, kind, tool, arguments_json, status, background_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const selectOne = db.prepare('SELECT * FROM gateway_call WHERE id = ?');
  // The dynamic audit queries differ only in which filters are present, so at most 2^8 texts are ever prepared.
  const prepared = new Map<string, Database.Statement>();
  const prepare = (sql: string): Database.Statement => {
    let statement = prepared.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      prepared.set(sql, statement);
    }
    return statement;
  };

  const updateCall = (id: number, update: CallUpdate): void => {
    const { columns, values } = updateAssignments(update);
    if (columns.length === 0) return;
    const result = prepare(`UPDATE gateway_call SET ${columns.join(', ')} WHERE id = ?`).run(...values, id);
    if (result.changes === 0) throw new GatewayError('not_found', `no audit record with id ${id}`);
  };

  return {
    insertCall: (record) => {
      const result = insert.run(
        record.startedAt,
        record.profile,
        record.sessionId,
        record.kind,
        record.tool,
        JSON.stringify(record.arguments),
        record.status ?? 'running',
        record.backgroundId ?? null,
      );
      return Number(result.lastInsertRowid);
    },
    completeCall: (id, completion) =>
      updateCall(id, {
        status: completion.status,
        durationMs: completion.durationMs,
        resultSummary: completion.resultSummary,
        ...(completion.error === undefined ? {} : { error: completion.error }),
        ...(completion.approval === undefined ? {} : { approval: completion.approval }),
        ...(completion.script === undefined ? {} : { script: completion.script }),
      }),
    updateCall,
    getCall: (id) => {
      const row = selectOne.get(id);
      return row === undefined ? undefined : toCallRecord(row);
    },
    queryCalls: (filter) => {
      const limit = clampLimit(filter.limit, 50, 500);
      const { where, params } = filterConditions(filter);
      // One row more than the page tells whether another page exists without a COUNT.
      const rows = prepare(`SELECT * FROM gateway_call ${where} ORDER BY id DESC LIMIT ?`)
        .all(...params, limit + 1)
        .map(toCallRecord);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return rows.length > limit && last !== undefined ? { rows: page, nextCursor: last.id } : { rows: page };
    },
  };
}

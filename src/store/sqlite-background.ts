import type Database from 'better-sqlite3';
import { z } from 'zod';
import { GatewayError } from '../errors/gateway-error.js';
import { clampLimit, parseJsonColumn, parseRow, toJsonColumn } from './sqlite-rows.js';
import type { SyncMethods } from './sqlite-sync.js';
import {
  backgroundDeliverySchema,
  backgroundStatusSchema,
  callKindSchema,
  type BackgroundCall,
  type BackgroundDelivery,
  type BackgroundStatus,
} from './store-records.js';

const backgroundRowSchema = z.object({
  id: z.string(),
  session_id: z.string(),
  profile: z.string(),
  kind: callKindSchema,
  tool: z.string(),
  script_id: z.string().nullable(),
  call_id: z.number().nullable(),
  started_at: z.number(),
  status: backgroundStatusSchema,
  finished_at: z.number().nullable(),
  result_json: z.string().nullable(),
  error: z.string().nullable(),
  delivery_json: z.string(),
});

function toBackgroundCall(row: unknown): BackgroundCall {
  const parsed = parseRow(backgroundRowSchema, row, 'background_calls');
  const delivery = parseJsonColumn(backgroundDeliverySchema, parsed.delivery_json, 'background_calls.delivery_json');
  if (delivery === null) throw new GatewayError('internal', `background call ${parsed.id} has no delivery state`);
  return {
    id: parsed.id,
    sessionId: parsed.session_id,
    profile: parsed.profile,
    kind: parsed.kind,
    tool: parsed.tool,
    scriptId: parsed.script_id,
    callId: parsed.call_id,
    startedAt: parsed.started_at,
    status: parsed.status,
    finishedAt: parsed.finished_at,
    result: parseJsonColumn(z.unknown(), parsed.result_json, 'background_calls.result_json') ?? undefined,
    error: parsed.error,
    delivery,
  };
}

/** The error every background call that was running when the gateway stopped is given. */
export const interruptedError = 'interrupted by a gateway restart';

type BackgroundMethods = SyncMethods<
  | 'insertBackground'
  | 'getBackground'
  | 'listBackground'
  | 'finishBackground'
  | 'updateDelivery'
  | 'markRunningInterrupted'
>;

export function createBackgroundMethods(db: Database.Database): BackgroundMethods {
  const insert = db.prepare(
    `INSERT INTO background_calls (id, session_id, profile, kind, tool, script_id, call_id, started_at, status,
       delivery_json)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)`,
  );
  const selectOne = db.prepare('SELECT * FROM background_calls WHERE id = ?');
  const finish = db.prepare(
    `UPDATE background_calls SET status = ?, finished_at = ?, result_json = ?, error = ?
     WHERE id = ? AND status = 'running'`,
  );
  const setDelivery = db.prepare('UPDATE background_calls SET delivery_json = ? WHERE id = ?');
  const selectRunning = db.prepare(`SELECT id FROM background_calls WHERE status = 'running'`);
  const rowIdSchema = z.object({ id: z.string() });

  return {
    insertBackground: (call) => {
      insert.run(
        call.id,
        call.sessionId,
        call.profile,
        call.kind,
        call.tool,
        call.scriptId,
        call.callId,
        call.startedAt,
        JSON.stringify(call.delivery),
      );
    },
    getBackground: (id) => {
      const row = selectOne.get(id);
      return row === undefined ? undefined : toBackgroundCall(row);
    },
    listBackground: (options = {}) => {
      const conditions: string[] = [];
      const params: (string | number)[] = [];
      if (options.sessionId !== undefined) {
        conditions.push('session_id = ?');
        params.push(options.sessionId);
      }
      if (options.status !== undefined) {
        conditions.push('status = ?');
        params.push(options.status satisfies BackgroundStatus);
      }
      const where = conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`;
      return db
        .prepare(`SELECT * FROM background_calls ${where} ORDER BY started_at DESC, id LIMIT ?`)
        .all(...params, clampLimit(options.limit, 200, 1000))
        .map(toBackgroundCall);
    },
    finishBackground: (id, input) =>
      finish.run(input.status, input.finishedAt, toJsonColumn(input.result), input.error ?? null, id).changes === 1,
    // Read and write in one transaction, so channels recording their delivery at once never undo each other.
    updateDelivery: db.transaction((id: string, patch: Partial<BackgroundDelivery>): void => {
      const row = selectOne.get(id);
      if (row === undefined) throw new GatewayError('not_found', `no background call ${id}`);
      setDelivery.run(JSON.stringify({ ...toBackgroundCall(row).delivery, ...patch }), id);
    }),
    markRunningInterrupted: db.transaction((at: number): BackgroundCall[] => {
      const ids = selectRunning.all().map((row) => parseRow(rowIdSchema, row, 'background_calls').id);
      for (const id of ids) finish.run('interrupted', at, null, interruptedError, id);
      return ids.flatMap((id) => {
        const row = selectOne.get(id);
        return row === undefined ? [] : [toBackgroundCall(row)];
      });
    }),
  };
}

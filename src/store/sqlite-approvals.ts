import type Database from 'better-sqlite3';
import { z } from 'zod';
import { clampLimit, parseJsonColumn, parseRow, toJsonColumn } from './sqlite-rows.js';
import type { SyncMethods } from './sqlite-sync.js';
import {
  approvalChannelSchema,
  approvalDecisionSchema,
  approvalOptionSchema,
  callKindSchema,
  jsonObjectSchema,
  type Approval,
  type ApprovalDecisionInput,
  type DecideApprovalResult,
} from './store-records.js';

const approvalRowSchema = z.object({
  id: z.string(),
  session_id: z.string(),
  profile: z.string(),
  kind: callKindSchema,
  tools_json: z.string(),
  arguments_json: z.string().nullable(),
  script: z.string().nullable(),
  definition_hash: z.string(),
  created_at: z.number(),
  expires_at: z.number(),
  decided_at: z.number().nullable(),
  decision: approvalDecisionSchema.nullable(),
  decided_by: z.string().nullable(),
  channel: approvalChannelSchema.nullable(),
  description: z.string().nullable(),
  options_json: z.string(),
});

const toolNamesSchema = z.array(z.string());
const optionsSchema = z.array(approvalOptionSchema);

function toApproval(row: unknown): Approval {
  const parsed = parseRow(approvalRowSchema, row, 'approvals');
  return {
    id: parsed.id,
    sessionId: parsed.session_id,
    profile: parsed.profile,
    kind: parsed.kind,
    tools: parseJsonColumn(toolNamesSchema, parsed.tools_json, 'approvals.tools_json') ?? [],
    arguments: parseJsonColumn(jsonObjectSchema, parsed.arguments_json, 'approvals.arguments_json'),
    script: parsed.script,
    definitionHash: parsed.definition_hash,
    createdAt: parsed.created_at,
    expiresAt: parsed.expires_at,
    decidedAt: parsed.decided_at,
    decision: parsed.decision,
    decidedBy: parsed.decided_by,
    channel: parsed.channel,
    description: parsed.description,
    options: parseJsonColumn(optionsSchema, parsed.options_json, 'approvals.options_json') ?? ['allow_once', 'deny'],
  };
}

const statusConditions = {
  pending: 'decision IS NULL',
  decided: 'decision IS NOT NULL',
  all: '1 = 1',
} as const;

type ApprovalMethods = SyncMethods<'insertApproval' | 'getApproval' | 'listApprovals' | 'decideApproval'>;

export function createApprovalMethods(db: Database.Database): ApprovalMethods {
  const insert = db.prepare(
    `INSERT INTO approvals (id, session_id, profile, kind, tools_json, arguments_json, script, definition_hash,
       created_at, expires_at, description, options_json)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const selectOne = db.prepare('SELECT * FROM approvals WHERE id = ?');
  // The condition on decision makes the first decision win even across processes sharing the database.
  const decide = db.prepare(
    `UPDATE approvals SET decision = ?, decided_by = ?, channel = ?, decided_at = ?
     WHERE id = ? AND decision IS NULL`,
  );

  const getApproval = (id: string): Approval | undefined => {
    const row = selectOne.get(id);
    return row === undefined ? undefined : toApproval(row);
  };

  return {
    insertApproval: (approval) => {
      insert.run(
        approval.id,
        approval.sessionId,
        approval.profile,
        approval.kind,
        JSON.stringify(approval.tools),
        toJsonColumn(approval.arguments),
        approval.script,
        approval.definitionHash,
        approval.createdAt,
        approval.expiresAt,
        approval.description,
        JSON.stringify(approval.options),
      );
    },
    getApproval,
    listApprovals: (options) => {
      const conditions: string[] = [statusConditions[options.status]];
      const params: (string | number)[] = [];
      if (options.sessionId !== undefined) {
        conditions.push('session_id = ?');
        params.push(options.sessionId);
      }
      params.push(clampLimit(options.limit, 200, 1000));
      return db
        .prepare(`SELECT * FROM approvals WHERE ${conditions.join(' AND ')} ORDER BY created_at DESC, id LIMIT ?`)
        .all(...params)
        .map(toApproval);
    },
    decideApproval: db.transaction((id: string, input: ApprovalDecisionInput): DecideApprovalResult => {
      const result = decide.run(input.decision, input.decidedBy, input.channel, input.at, id);
      const approval = getApproval(id);
      if (approval === undefined) return { ok: false, reason: 'not_found' };
      return result.changes === 1 ? { ok: true, approval } : { ok: false, reason: 'already_decided', approval };
    }),
  };
}

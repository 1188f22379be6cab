import { z } from 'zod';
import { callStatuses } from './call-statuses.js';

// The shapes the store hands out. Times are epoch milliseconds; JSON columns are parsed with these schemas on read.

export const callKindSchema = z.enum(['call', 'script']);
export type CallKind = z.infer<typeof callKindSchema>;

export const callStatusSchema = z.enum(callStatuses);
export type CallStatus = z.infer<typeof callStatusSchema>;

export const approvalDecisionSchema = z.enum(['allow_once', 'allow_session', 'deny', 'expired']);
export type ApprovalDecision = z.infer<typeof approvalDecisionSchema>;

/** The decisions a person may pick on an approval card. */
export const approvalOptionSchema = z.enum(['allow_once', 'allow_session', 'deny']);
export type ApprovalOption = z.infer<typeof approvalOptionSchema>;

export const approvalChannelSchema = z.enum(['elicitation', 'console', 'api', 'cli', 'timeout', 'withdrawn']);
export type ApprovalChannel = z.infer<typeof approvalChannelSchema>;

export const backgroundStatusSchema = z.enum(['running', 'ok', 'error', 'cancelled', 'interrupted']);
export type BackgroundStatus = z.infer<typeof backgroundStatusSchema>;

export const jsonObjectSchema = z.record(z.string(), z.unknown());

export interface Session {
  id: string;
  profile: string;
  client: string | null;
  startedAt: number;
  lastActivityAt: number;
}

/** How an approval that gated a call was answered, as recorded in the audit. */
export const callApprovalSchema = z.object({
  decision: approvalDecisionSchema,
  decidedBy: z.string(),
  channel: approvalChannelSchema,
  waitedMs: z.number(),
});
export type CallApproval = z.infer<typeof callApprovalSchema>;

/** What the audit keeps about one run_script run. */
export const callScriptSchema = z.object({
  description: z.string().nullable(),
  calls: z.number().int(),
  failures: z.number().int(),
  callsPerTool: z.record(z.string(), z.number().int()),
  exitCode: z.number().int().nullable(),
  detailsDir: z.string(),
  content: z.string(),
});
export type CallScript = z.infer<typeof callScriptSchema>;

export interface NewCallRecord {
  startedAt: number;
  profile: string;
  sessionId: string;
  kind: CallKind;
  /** The namespaced tool name; `run_script` for scripts. */
  tool: string;
  arguments: Record<string, unknown>;
  status?: CallStatus;
  backgroundId?: string | null;
}

export interface CallRecord {
  id: number;
  startedAt: number;
  profile: string;
  sessionId: string;
  kind: CallKind;
  tool: string;
  arguments: Record<string, unknown>;
  status: CallStatus;
  durationMs: number | null;
  resultSummary: string | null;
  error: string | null;
  approval: CallApproval | null;
  script: CallScript | null;
  backgroundId: string | null;
}

export interface CallCompletion {
  status: CallStatus;
  durationMs: number;
  resultSummary: string;
  error?: string | null;
  approval?: CallApproval | null;
  script?: CallScript | null;
}

/** Fields of a call record that may change after insertion; absent keys stay as they are. */
export interface CallUpdate {
  status?: CallStatus;
  durationMs?: number | null;
  resultSummary?: string | null;
  error?: string | null;
  approval?: CallApproval | null;
  script?: CallScript | null;
  backgroundId?: string | null;
}

export interface CallFilter {
  /** Inclusive lower bound on startedAt. */
  since?: number;
  /** Exclusive upper bound on startedAt. */
  until?: number;
  profile?: string;
  sessionId?: string;
  /** Exact namespaced tool name (exact so that it can use an index). */
  tool?: string;
  status?: CallStatus;
  kind?: CallKind;
  /** Page size: default 50, at most 500. */
  limit?: number;
  /** Keyset cursor: only rows with an id below this (pass the previous page's nextCursor). */
  before?: number;
}

export interface CallPage {
  rows: CallRecord[];
  /** Present when more rows match; pass it as `before` for the next page. */
  nextCursor?: number;
}

export interface NewApproval {
  id: string;
  sessionId: string;
  profile: string;
  kind: CallKind;
  tools: string[];
  /** The call's arguments (kind 'call'); null for scripts. */
  arguments: Record<string, unknown> | null;
  /** The script text (kind 'script'); null for calls. */
  script: string | null;
  definitionHash: string;
  createdAt: number;
  expiresAt: number;
  description: string | null;
  options: ApprovalOption[];
}

export interface Approval extends NewApproval {
  decidedAt: number | null;
  decision: ApprovalDecision | null;
  decidedBy: string | null;
  channel: ApprovalChannel | null;
}

export interface ApprovalDecisionInput {
  decision: ApprovalDecision;
  decidedBy: string;
  channel: ApprovalChannel;
  at: number;
}

export type DecideApprovalResult =
  | { ok: true; approval: Approval }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'already_decided'; approval: Approval };

export interface Allowance {
  definitionHash: string;
  grantedAt: number;
}

const deliveryStateSchema = z.enum(['pending', 'delivered']);

/** Per-channel delivery state of a background call's result (PRODUCT.md §6). */
export const backgroundDeliverySchema = z.object({
  /** Appended to the session's next tool result. */
  nextResult: deliveryStateSchema,
  /** Published as an event for the console timeline. */
  event: deliveryStateSchema,
  webhook: z.object({
    state: z.enum(['pending', 'delivered', 'failed', 'none']),
    attempts: z.number().int().nonnegative(),
    lastError: z.string().optional(),
  }),
  /** Read through the gateway's background-calls tool. */
  tool: deliveryStateSchema,
});
export type BackgroundDelivery = z.infer<typeof backgroundDeliverySchema>;

/** The delivery state of a background call that has not finished yet. */
export function createInitialDelivery(options: { webhook: boolean }): BackgroundDelivery {
  return {
    nextResult: 'pending',
    event: 'pending',
    webhook: { state: options.webhook ? 'pending' : 'none', attempts: 0 },
    tool: 'pending',
  };
}

export interface NewBackgroundCall {
  id: string;
  sessionId: string;
  profile: string;
  kind: CallKind;
  tool: string;
  scriptId: string | null;
  callId: number | null;
  startedAt: number;
  delivery: BackgroundDelivery;
}

export interface BackgroundCall extends NewBackgroundCall {
  status: BackgroundStatus;
  finishedAt: number | null;
  result: unknown;
  error: string | null;
}

export interface BackgroundFinish {
  status: Exclude<BackgroundStatus, 'running'>;
  finishedAt: number;
  /** Any JSON value; stored as text. */
  result?: unknown;
  error?: string | null;
}

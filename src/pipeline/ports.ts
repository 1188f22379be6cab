import type { CallToolResult } from '@modelcontextprotocol/server';
import type { ApprovalOption } from '../policy/policy.js';

/** What the pipeline records about one direct call or script (the `gateway_call` audit record). */
export interface CallRecordStart {
  profile: string;
  sessionId: string;
  kind: 'call' | 'script';
  tool: string;
  arguments: unknown;
  startedAt: number;
}

export interface ApprovalOutcome {
  decision: 'allow_once' | 'allow_session' | 'deny' | 'expired';
  decidedBy: string;
  channel: 'elicitation' | 'console' | 'api' | 'cli' | 'timeout' | 'withdrawn';
  waitedMs: number;
}

export interface ScriptRecordDetails {
  description: string;
  calls: number;
  failures: number;
  callsPerTool: Record<string, number>;
  exitCode: number | null;
  detailsDir: string;
  content: string;
}

export interface CallRecordFinish {
  status: 'ok' | 'error' | 'denied' | 'expired' | 'cancelled' | 'timeout' | 'background' | 'interrupted';
  durationMs: number;
  resultSummary: string;
  error?: string;
  approval?: ApprovalOutcome;
  script?: ScriptRecordDetails;
}

export interface AuditLog {
  start(record: CallRecordStart): Promise<number>;
  finish(id: number, record: CallRecordFinish): Promise<void>;
}

/** Session allowances ("allow for this session"), bound to the tool definition's hash. */
export interface Allowances {
  get(sessionId: string, tool: string): Promise<string | undefined>;
  grant(sessionId: string, tool: string, definitionHash: string): Promise<void>;
}

/** Gateway-side writes into a session workspace (confined, never following links). */
export interface WorkspaceFiles {
  write(sessionId: string, relativePath: string, data: string): Promise<void>;
}

export interface ApprovalRequest {
  sessionId: string;
  profile: string;
  kind: 'call' | 'script';
  tools: string[];
  arguments?: unknown;
  script?: string;
  description?: string;
  definitionHash: string;
  options: ApprovalOption[];
}

/** Asks a person; resolves with the decision, or rejects when the request is withdrawn (signal). */
export interface Approver {
  request(request: ApprovalRequest, channel: ApprovalChannelHint, signal?: AbortSignal): Promise<ApprovalOutcome>;
}

export type ElicitAnswer = ApprovalOption | 'declined';

/** What a 2026-era retry carries back: the signed binding minted with the input-required result, and the answer. */
export interface ApprovalBinding {
  approvalId: string;
  binding: string;
  sessionId: string;
}

/** How the calling client can be asked in-band, when it declared elicitation. */
export interface ApprovalChannelHint {
  /** 2025 era: an elicitation request sent inside the call. */
  elicit?: (message: string, options: ApprovalOption[], signal?: AbortSignal) => Promise<ElicitAnswer>;
  /** 2026 era: the call answers input-required and the client retries with the answer. */
  inputRequired?: { state: ApprovalBinding | undefined; answer: ElicitAnswer | undefined };
}

/** Runs work that may move to the background (PRODUCT.md §6); resolves with the reply for the client now. */
export interface BackgroundRunner {
  run(start: BackgroundStart, work: (signal: AbortSignal) => Promise<CallToolResult>): Promise<CallToolResult>;
}

export interface BackgroundStart {
  sessionId: string;
  profile: string;
  kind: 'call' | 'script';
  tool: string;
  callId: number | null;
  scriptId?: string;
  clientSignal?: AbortSignal;
  /** Long-task tools go to the background at once; everything else after `autoAfterSec`. */
  immediately: boolean;
}

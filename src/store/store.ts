import { createSqliteStore } from './sqlite-store.js';
import type {
  Allowance,
  Approval,
  ApprovalDecisionInput,
  BackgroundCall,
  BackgroundDelivery,
  BackgroundFinish,
  BackgroundStatus,
  CallCompletion,
  CallFilter,
  CallPage,
  CallRecord,
  CallUpdate,
  DecideApprovalResult,
  NewApproval,
  NewBackgroundCall,
  NewCallRecord,
  Session,
} from './store-records.js';

/**
 * Everything the gateway persists. Methods are async so that a PostgreSQL implementation (several
 * gateway replicas behind a load balancer) can serve the same interface; ids are made by the caller
 * except the audit's integer id, and times are epoch milliseconds.
 *
 * Rows that name a session (approvals, allowances, background calls) need `upsertSession` first;
 * audit rows do not, so the audit never fails to record.
 */
export interface Store {
  /** Creates the session or touches its last activity (and client, when given); returns the stored row. */
  upsertSession(input: { id: string; profile: string; client?: string | null; at: number }): Promise<Session>;
  getSession(id: string): Promise<Session | undefined>;
  /** Newest activity first; `limit` defaults to 100, at most 1000. */
  listSessions(options?: { limit?: number }): Promise<Session[]>;

  /** Records the start of a direct call or a script (status 'running' unless given); returns its id. */
  insertCall(record: NewCallRecord): Promise<number>;
  completeCall(id: number, completion: CallCompletion): Promise<void>;
  updateCall(id: number, update: CallUpdate): Promise<void>;
  getCall(id: number): Promise<CallRecord | undefined>;
  /** Newest first, keyset-paginated on id. */
  queryCalls(filter: CallFilter): Promise<CallPage>;

  insertApproval(approval: NewApproval): Promise<void>;
  getApproval(id: string): Promise<Approval | undefined>;
  /** Newest first; 'pending' means not decided yet (expiry is a decision made by whoever times it out). */
  listApprovals(options: {
    status: 'pending' | 'decided' | 'all';
    sessionId?: string;
    limit?: number;
  }): Promise<Approval[]>;
  /** Atomic: the first decision wins, every later one gets `already_decided` with the stored approval. */
  decideApproval(id: string, decision: ApprovalDecisionInput): Promise<DecideApprovalResult>;

  /** Grants (or re-grants, with a new definition hash) "allowed for this session" for one tool. */
  grantAllowance(sessionId: string, tool: string, definitionHash: string, at: number): Promise<void>;
  getAllowance(sessionId: string, tool: string): Promise<Allowance | undefined>;
  revokeAllowance(sessionId: string, tool: string): Promise<void>;

  insertBackground(call: NewBackgroundCall): Promise<void>;
  getBackground(id: string): Promise<BackgroundCall | undefined>;
  /** Newest first; `limit` defaults to 200, at most 1000. */
  listBackground(options?: {
    sessionId?: string;
    status?: BackgroundStatus;
    limit?: number;
  }): Promise<BackgroundCall[]>;
  /** Ends a running background call; false when it was not running (already ended or unknown). */
  finishBackground(id: string, finish: BackgroundFinish): Promise<boolean>;
  /** Sets the given channels' delivery state, leaving the others as stored. */
  updateDelivery(id: string, delivery: Partial<BackgroundDelivery>): Promise<void>;
  /** After a restart: every running background call becomes 'interrupted'; returns those rows. */
  markRunningInterrupted(at: number): Promise<BackgroundCall[]>;

  close(): Promise<void>;
}

/** Opens (creating and migrating when needed) the SQLite database at `path`. */
export function openSqliteStore(path: string): Store {
  return createSqliteStore(path);
}

import type { GatewayEvent } from '../../src/events/event-bus.js';
import type {
  Approval,
  ApprovalOption,
  BackgroundCall,
  CallPage,
  CallRecord,
  CallStatus,
  Session,
} from '../../src/store/store-records.js';

// The console reads the same record shapes the gateway's store hands out; only type imports cross over.
export type { Approval, ApprovalOption, BackgroundCall, CallPage, CallRecord, CallStatus, GatewayEvent, Session };

export interface SessionRow extends Session {
  running: number;
  pendingApprovals: number;
}

/** A background call as the API sends it: delivery state is the gateway's business. */
export type BackgroundRow = Omit<BackgroundCall, 'delivery'>;

export interface ToolRow {
  name: string;
  service: string;
  description: string;
  class: 'read' | 'write' | 'destructive';
  longTask: boolean;
  disabled: boolean;
  offered: boolean;
  reasons: string[];
}

export interface ServiceRow {
  name: string;
  state?: 'starting' | 'up' | 'down';
  since?: number;
  error?: string;
  protocolVersion?: string;
  reconnects?: number;
}

export interface ProfileCatalogue {
  name: string;
  mode: string;
  readOnly: boolean;
  services: ServiceRow[];
  tools: ToolRow[];
}

export interface CatalogueProblem {
  service: string;
  tool: string;
  problem: string;
}

export interface FileText {
  path: string;
  text: string;
  size: number;
  offset: number;
  eof: boolean;
}

export { callStatuses } from '../../src/store/call-statuses.js';

/** An HTTP answer other than 2xx, with the gateway's error message when it gave one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type Query = Record<string, string | number | undefined>;

/** Talks to /api with the admin token; one instance per login. */
export class ApiClient {
  constructor(readonly token: string) {}

  async get<T>(path: string, query: Query = {}): Promise<T> {
    return this.request<T>('GET', path, query);
  }

  async post<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('POST', path, {}, body);
  }

  /** The event stream; EventSource cannot send headers, so the token rides in the query. */
  eventsUrl(): string {
    return `/api/events?token=${encodeURIComponent(this.token)}`;
  }

  private async request<T>(method: string, path: string, query: Query, body?: unknown): Promise<T> {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(query))
      if (value !== undefined && value !== '') search.set(key, String(value));
    const url = `/api${path}${search.size > 0 ? `?${search.toString()}` : ''}`;
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) {
      const payload = (await response.json().catch(() => undefined)) as { error?: { message?: string } } | undefined;
      throw new ApiError(response.status, payload?.error?.message ?? `${response.status} ${response.statusText}`);
    }
    return (await response.json()) as T;
  }

  sessions(): Promise<SessionRow[]> {
    return this.get<{ sessions: SessionRow[] }>('/sessions').then((answer) => answer.sessions);
  }

  audit(filter: Query): Promise<CallPage> {
    return this.get<CallPage>('/audit', filter);
  }

  approvals(status: 'pending' | 'decided' | 'all', session?: string): Promise<Approval[]> {
    return this.get<{ approvals: Approval[] }>('/approvals', { status, session }).then((answer) => answer.approvals);
  }

  approval(id: string): Promise<Approval> {
    return this.get<{ approval: Approval }>(`/approvals/${encodeURIComponent(id)}`).then((answer) => answer.approval);
  }

  decide(id: string, decision: ApprovalOption): Promise<Approval> {
    return this.post<{ approval: Approval }>(`/approvals/${encodeURIComponent(id)}`, {
      decision,
      channel: 'console',
    }).then((answer) => answer.approval);
  }

  /** Background calls; an empty list when the gateway has no background API (404). */
  async background(session: string, status?: 'running'): Promise<BackgroundRow[]> {
    try {
      const answer = await this.get<{ background: BackgroundRow[] }>('/background', { session, status });
      return answer.background;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return [];
      throw error;
    }
  }

  cancelBackground(id: string): Promise<BackgroundRow> {
    return this.post<{ background: BackgroundRow }>(`/background/${encodeURIComponent(id)}/cancel`, {}).then(
      (answer) => answer.background,
    );
  }

  tools(): Promise<{ profiles: ProfileCatalogue[]; problems: CatalogueProblem[] }> {
    return this.get('/tools');
  }

  file(session: string, path: string): Promise<FileText> {
    return this.get<FileText>('/files', { session, path });
  }
}

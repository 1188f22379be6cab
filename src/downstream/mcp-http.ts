import {
  CLIENT_INFO_META_KEY,
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
} from '@modelcontextprotocol/server';
import type { AuthInfo, Server } from '@modelcontextprotocol/server';
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import type { Profile } from '../config/config-schema.js';
import type { Logger } from '../log/logger.js';
import type { CallerContext } from '../pipeline/call-pipeline.js';
import { resolveSessionId } from '../sessions/session-id.js';
import { bearerToken, tokenSessionKey, type TokenAuth } from './token-auth.js';

export interface McpHttpDeps {
  auth: TokenAuth;
  profiles: Readonly<Record<string, Profile>>;
  createServer: (caller: CallerContext) => Server;
  onSessionSeen: (caller: CallerContext, client: string | undefined) => void;
  logger: Logger;
}

interface LegacySession {
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  profile: string;
  lastSeen: number;
}

const sessionHeader = 'x-toolgate-session';
const legacyIdleMs = 60 * 60 * 1000;

function jsonRpcError(status: number, message: string): Response {
  return Response.json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }, { status });
}

function clientNameOf(body: unknown): string | undefined {
  const params = (body as { params?: { clientInfo?: { name?: unknown }; _meta?: Record<string, unknown> } })?.params;
  const info = params?.clientInfo ?? (params?._meta?.[CLIENT_INFO_META_KEY] as { name?: unknown } | undefined);
  return typeof info?.name === 'string' ? info.name.slice(0, 100) : undefined;
}

/**
 * `/mcp` for both eras: 2026-07-28 requests go to the SDK's stateless handler; 2025-11-25 clients get a
 * sessionful transport (routed by Mcp-Session-Id) so the gateway can send them requests such as elicitation.
 */
export class McpHttpEndpoint {
  private readonly legacySessions = new Map<string, LegacySession>();
  private readonly modern;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly deps: McpHttpDeps) {
    this.modern = createMcpHandler(
      (ctx) => deps.createServer((ctx.authInfo?.extra as { caller: CallerContext }).caller),
      { legacy: 'reject', onerror: (error) => deps.logger.warn(`mcp handler: ${error.message}`) },
    );
    this.sweeper = setInterval(() => this.closeIdle(), 60_000);
    this.sweeper.unref();
  }

  /** Clients re-list after this; each sees only its own profile's tools. */
  toolsChanged(): void {
    this.modern.notify.toolsChanged();
    for (const session of this.legacySessions.values())
      void session.server.sendToolListChanged().catch(() => undefined);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.legacySessions.values()].map((session) => session.transport.close()));
    await this.modern.close();
  }

  async handle(c: Context): Promise<Response> {
    const token = bearerToken(c.req.header('authorization'));
    const profileName = this.deps.auth.profileFor(token);
    const profile = profileName === undefined ? undefined : this.deps.profiles[profileName];
    if (token === undefined || profileName === undefined || profile === undefined) {
      return new Response('Unauthorized', { status: 401, headers: { 'WWW-Authenticate': 'Bearer' } });
    }
    const request = c.req.raw;
    let body: unknown;
    if (request.method === 'POST') {
      try {
        body = await request.clone().json();
      } catch {
        return Response.json(
          { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: body is not JSON' }, id: null },
          { status: 400 },
        );
      }
    }
    const headerSession = c.req.header(sessionHeader);
    const mcpSessionId = c.req.header('mcp-session-id');
    const tokenKey = tokenSessionKey(token);

    if (mcpSessionId !== undefined) {
      const session = this.legacySessions.get(mcpSessionId);
      if (session === undefined || session.profile !== profileName) return jsonRpcError(404, 'Session not found');
      session.lastSeen = Date.now();
      const response = await session.transport.handleRequest(request, { parsedBody: body });
      if (request.method === 'DELETE') this.legacySessions.delete(mcpSessionId);
      return response;
    }

    if (request.method === 'POST' && (await isLegacyRequest(request, body))) {
      const initialize = Array.isArray(body)
        ? body.some((message) => isInitializeRequest(message))
        : isInitializeRequest(body);
      if (!initialize) return jsonRpcError(400, 'Bad Request: Mcp-Session-Id header is required');
      const newSessionId = randomUUID();
      const caller: CallerContext = {
        profileName,
        profile,
        sessionId: resolveSessionId({ profile: profileName, headerSession, mcpSessionId: newSessionId, tokenKey }),
      };
      const server = this.deps.createServer(caller);
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => newSessionId,
        onsessioninitialized: (id) => {
          this.legacySessions.set(id, { transport, server, profile: profileName, lastSeen: Date.now() });
        },
        onsessionclosed: (id) => {
          this.legacySessions.delete(id);
        },
      });
      transport.onclose = () => this.legacySessions.delete(newSessionId);
      await server.connect(transport);
      this.deps.onSessionSeen(caller, clientNameOf(body));
      return transport.handleRequest(request, { parsedBody: body });
    }

    const caller: CallerContext = {
      profileName,
      profile,
      sessionId: resolveSessionId({ profile: profileName, headerSession, tokenKey }),
    };
    if (request.method === 'POST') this.deps.onSessionSeen(caller, clientNameOf(body));
    const authInfo: AuthInfo = { token: tokenKey, clientId: profileName, scopes: [], extra: { caller } };
    return this.modern.fetch(request, { parsedBody: body, authInfo });
  }

  private closeIdle(): void {
    const now = Date.now();
    for (const [id, session] of this.legacySessions) {
      if (now - session.lastSeen > legacyIdleMs) {
        this.legacySessions.delete(id);
        void session.transport.close().catch(() => undefined);
      }
    }
  }
}

import { Hono, type Context } from 'hono';
import { z } from 'zod';
import type { ApprovalService } from '../approvals/approval-service.js';
import type { BackgroundCalls } from '../background/background-calls.js';
import { isGatewayError, type GatewayErrorCode } from '../errors/gateway-error.js';
import type { Logger } from '../log/logger.js';
import { addConsoleRoutes, type ConsoleApiDeps } from './console-api.js';
import { bearerToken, type TokenAuth } from './token-auth.js';

export interface AdminApiDeps extends ConsoleApiDeps {
  auth: TokenAuth;
  approvals: ApprovalService;
  background: BackgroundCalls;
}

const httpStatus: Partial<Record<GatewayErrorCode, 400 | 401 | 403 | 404 | 409>> = {
  invalid_args: 400,
  config_invalid: 400,
  unauthorized: 401,
  not_allowed: 403,
  not_found: 404,
  conflict: 409,
};

/** Maps errors to HTTP at the edge: gateway errors say what went wrong, anything else is a generic 500. */
export function errorResponse(c: Context, error: unknown, logger: Logger): Response {
  if (isGatewayError(error)) {
    return c.json({ error: { code: error.code, message: error.message } }, httpStatus[error.code] ?? 500);
  }
  logger.error('admin API failed', { error: String(error) });
  return c.json({ error: { code: 'internal', message: 'internal error in the gateway (see the gateway log)' } }, 500);
}

const decisionBodySchema = z
  .object({
    decision: z.enum(['allow_once', 'allow_session', 'deny']),
    channel: z.enum(['api', 'console']).default('api'),
    by: z.string().min(1).max(100).optional(),
  })
  .strict();

const listQuerySchema = z.object({
  status: z.enum(['pending', 'decided', 'all']).default('pending'),
  session: z.string().optional(),
});

/** The JSON API under /api: every route needs the admin token, carried as a bearer token or `?token=` (SSE). */
export function createAdminApi(deps: AdminApiDeps): Hono {
  const api = new Hono();
  api.use('*', async (c, next) => {
    const token = bearerToken(c.req.header('authorization')) ?? c.req.query('token');
    if (!deps.auth.isAdmin(token))
      return c.json({ error: { code: 'unauthorized', message: 'admin token required' } }, 401);
    await next();
    return undefined;
  });

  api.get('/approvals', async (c) => {
    const query = listQuerySchema.safeParse(c.req.query());
    if (!query.success)
      return c.json({ error: { code: 'invalid_args', message: 'status must be pending, decided or all' } }, 400);
    const approvals = await deps.store.listApprovals({
      status: query.data.status,
      ...(query.data.session === undefined ? {} : { sessionId: query.data.session }),
    });
    return c.json({ approvals });
  });

  api.get('/approvals/:id', async (c) => {
    const approval = await deps.store.getApproval(c.req.param('id'));
    return approval === undefined
      ? c.json({ error: { code: 'not_found', message: `no approval ${c.req.param('id')}` } }, 404)
      : c.json({ approval });
  });

  api.post('/approvals/:id', async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return c.json(
        {
          error: {
            code: 'invalid_args',
            message: 'body must be JSON: {"decision": "allow_once" | "allow_session" | "deny"}',
          },
        },
        400,
      );
    }
    const parsed = decisionBodySchema.safeParse(body);
    if (!parsed.success) {
      const message = parsed.error.issues
        .map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`)
        .join('; ');
      return c.json({ error: { code: 'invalid_args', message } }, 400);
    }
    try {
      const approval = await deps.approvals.decide(c.req.param('id'), {
        decision: parsed.data.decision,
        channel: parsed.data.channel,
        decidedBy: parsed.data.by ?? `admin (${parsed.data.channel})`,
      });
      return c.json({ approval });
    } catch (error) {
      return errorResponse(c, error, deps.logger);
    }
  });

  api.get('/background', async (c) => {
    const status = z
      .enum(['running', 'ok', 'error', 'cancelled', 'interrupted'])
      .optional()
      .safeParse(c.req.query('status'));
    if (!status.success) return c.json({ error: { code: 'invalid_args', message: 'unknown status' } }, 400);
    const session = c.req.query('session');
    const background = await deps.store.listBackground({
      ...(session === undefined ? {} : { sessionId: session }),
      ...(status.data === undefined ? {} : { status: status.data }),
    });
    return c.json({ background });
  });

  api.post('/background/:id/cancel', async (c) => {
    try {
      return c.json({ background: await deps.background.cancel(c.req.param('id')) });
    } catch (error) {
      return errorResponse(c, error, deps.logger);
    }
  });

  addConsoleRoutes(api, deps);
  return api;
}

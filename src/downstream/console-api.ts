import type { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import type { Config } from '../config/config-schema.js';
import type { EventBus, GatewayEvent } from '../events/event-bus.js';
import type { Logger } from '../log/logger.js';
import { isOffered } from '../policy/policy.js';
import type { Workspaces } from '../sessions/workspace.js';
import type { Store } from '../store/store.js';
import { callKindSchema, callStatusSchema } from '../store/store-records.js';
import type { ToolSource } from '../upstream/service-registry.js';
import { errorResponse } from './admin-api.js';

export interface ConsoleApiDeps {
  config: Config;
  store: Store;
  events: EventBus;
  tools: ToolSource;
  workspaces: Workspaces;
  logger: Logger;
}

const optionalNumber = z.coerce.number().int().nonnegative().optional();

const auditQuerySchema = z.object({
  since: optionalNumber,
  until: optionalNumber,
  profile: z.string().min(1).optional(),
  session: z.string().min(1).optional(),
  tool: z.string().min(1).optional(),
  status: callStatusSchema.optional(),
  kind: callKindSchema.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  before: optionalNumber,
});

const fileQuerySchema = z.object({
  session: z.string().min(1),
  path: z.string().min(1),
  offset: z.coerce.number().int().nonnegative().default(0),
  length: z.coerce.number().int().min(1).max(2_000_000).default(1_000_000),
});

/** Console routes (already behind the admin-token guard of the /api app): sessions, audit, tools, files, events. */
export function addConsoleRoutes(api: Hono, deps: ConsoleApiDeps): void {
  api.get('/sessions', async (c) => {
    const [sessions, running, background, pending] = await Promise.all([
      deps.store.listSessions({ limit: 200 }),
      deps.store.queryCalls({ status: 'running', limit: 500 }),
      deps.store.queryCalls({ status: 'background', limit: 500 }),
      deps.store.listApprovals({ status: 'pending', limit: 500 }),
    ]);
    const work = [...running.rows, ...background.rows];
    return c.json({
      sessions: sessions.map((session) => ({
        ...session,
        running: work.filter((row) => row.sessionId === session.id).length,
        pendingApprovals: pending.filter((approval) => approval.sessionId === session.id).length,
      })),
    });
  });

  api.get('/audit', async (c) => {
    const query = auditQuerySchema.safeParse(c.req.query());
    if (!query.success) {
      const message = query.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
      return c.json({ error: { code: 'invalid_args', message } }, 400);
    }
    const { session, ...rest } = query.data;
    const page = await deps.store.queryCalls({
      ...Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined)),
      ...(session === undefined ? {} : { sessionId: session }),
    });
    return c.json(page);
  });

  api.get('/calls/:id', async (c) => {
    const call = await deps.store.getCall(Number(c.req.param('id')));
    return call === undefined
      ? c.json({ error: { code: 'not_found', message: `no call ${c.req.param('id')}` } }, 404)
      : c.json({ call });
  });

  api.get('/tools', (c) => {
    const catalogue = deps.tools.catalogue();
    const states = deps.tools.serviceStates();
    const profiles = Object.entries(deps.config.profiles).map(([name, profile]) => ({
      name,
      mode: profile.mode,
      readOnly: profile.readOnly,
      services: profile.services.map((service) => ({ name: service, ...states[service] })),
      tools: [...catalogue.entries.values()]
        .filter((entry) => profile.services.includes(entry.service))
        .map((entry) => ({
          name: entry.name,
          service: entry.service,
          description: entry.definition.description ?? '',
          class: entry.class,
          longTask: entry.longTask,
          disabled: entry.disabled,
          offered: isOffered(entry, profile),
          reasons: entry.reasons,
        })),
    }));
    return c.json({ profiles, problems: catalogue.problems });
  });

  api.get('/files', async (c) => {
    const query = fileQuerySchema.safeParse(c.req.query());
    if (!query.success)
      return c.json({ error: { code: 'invalid_args', message: 'session and path are required' } }, 400);
    try {
      const read = await deps.workspaces.readFile(query.data.session, query.data.path, {
        offset: query.data.offset,
        length: query.data.length,
        as: 'text',
      });
      return c.json({ path: query.data.path, ...read });
    } catch (error) {
      return errorResponse(c, error, deps.logger);
    }
  });

  api.get('/events', (c) =>
    streamSSE(c, async (stream) => {
      const queue: GatewayEvent[] = [];
      let wake: (() => void) | undefined;
      const unsubscribe = deps.events.subscribe((event) => {
        // A console that stops reading must not grow the gateway's memory: drop the oldest events.
        if (queue.length > 1000) queue.shift();
        queue.push(event);
        wake?.();
      });
      stream.onAbort(() => {
        unsubscribe();
        wake?.();
      });
      await stream.writeSSE({ event: 'ready', data: '{}' });
      while (!stream.aborted) {
        const event = queue.shift();
        if (event === undefined) {
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, 15_000).unref();
          });
          wake = undefined;
          if (queue.length === 0 && !stream.aborted) await stream.writeSSE({ event: 'ping', data: '{}' });
          continue;
        }
        await stream.writeSSE({ event: event.type, data: JSON.stringify(event) });
      }
      unsubscribe();
    }),
  );
}

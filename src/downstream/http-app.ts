import { Hono } from 'hono';
import type { ToolSource } from '../upstream/service-registry.js';
import type { McpHttpEndpoint } from './mcp-http.js';

export interface HttpAppDeps {
  mcp: McpHttpEndpoint;
  tools: ToolSource;
  /** Routes mounted under /api (approvals, audit, events), each guarded by the admin token. */
  api?: Hono;
  /** Serves the console at / when it is built. */
  console?: Hono;
}

/** The gateway's HTTP surface; built as a value so tests can call `app.request()` without a port. */
export function createHttpApp(deps: HttpAppDeps): Hono {
  const app = new Hono();
  app.get('/health', (c) => {
    const services = deps.tools.serviceStates();
    const down = Object.values(services).some((service) => service.state !== 'up');
    return c.json({
      status: down ? 'degraded' : 'ok',
      services: Object.fromEntries(
        Object.entries(services).map(([name, state]) => [
          name,
          {
            state: state.state,
            since: new Date(state.since).toISOString(),
            ...(state.error === undefined ? {} : { error: state.error }),
            ...(state.protocolVersion === undefined ? {} : { protocolVersion: state.protocolVersion }),
          },
        ]),
      ),
    });
  });
  app.all('/mcp', (c) => deps.mcp.handle(c));
  if (deps.api !== undefined) app.route('/api', deps.api);
  if (deps.console !== undefined) app.route('/', deps.console);
  return app;
}

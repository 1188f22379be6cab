import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { loadOrCreateSecrets } from '../config/secrets.js';
import { createAdminApi } from '../downstream/admin-api.js';
import { createConsoleApp } from '../downstream/console-static.js';
import { createHttpApp } from '../downstream/http-app.js';
import { McpHttpEndpoint } from '../downstream/mcp-http.js';
import { TokenAuth } from '../downstream/token-auth.js';
import { createGateway, version, type Gateway } from '../gateway.js';
import type { Logger } from '../log/logger.js';
import type { CliContext } from './cli-context.js';

export interface RunningServer {
  gateway: Gateway;
  url: string;
  close(): Promise<void>;
}

/** Debounces upstream list_changed bursts into one notification to clients. */
function debounce(action: () => void, ms: number): () => void {
  let timer: NodeJS.Timeout | undefined;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(action, ms);
  };
}

export async function startServer(
  context: CliContext,
  logger: Logger,
  out: (line: string) => void,
): Promise<RunningServer> {
  const { config } = context;
  const gateway = await createGateway({ ...context, logger });
  const secrets = loadOrCreateSecrets(context.dataDir, config);
  const auth = new TokenAuth(config, secrets.adminToken, secrets.profileTokens);
  const mcp = new McpHttpEndpoint({
    auth,
    profiles: config.profiles,
    createServer: (caller) => gateway.createServer(caller),
    onSessionSeen: (caller, client) => gateway.sessionSeen(caller, client),
    logger,
  });
  gateway.registry.onCatalogueChange(debounce(() => mcp.toolsChanged(), 200));
  const interrupted = await gateway.background.recoverAfterRestart();
  if (interrupted > 0)
    logger.warn(`${interrupted} background call(s) were interrupted by the restart; their failure is delivered`);
  await gateway.registry.start();
  const api = createAdminApi({
    auth,
    config,
    store: gateway.store,
    approvals: gateway.approvals,
    background: gateway.background,
    events: gateway.events,
    tools: gateway.registry,
    workspaces: gateway.workspaces,
    logger,
  });
  const app = createHttpApp({ mcp, tools: gateway.registry, api, console: createConsoleApp() });
  const server = await new Promise<ServerType>((resolve) => {
    const started = serve({ fetch: app.fetch, hostname: config.listen.host, port: config.listen.port }, () =>
      resolve(started),
    );
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  out(`toolgate ${version} is serving`);
  out(`  MCP endpoint  ${url}/mcp   (Streamable HTTP, protocol 2025-11-25 and 2026-07-28)`);
  for (const [name, profile] of Object.entries(config.profiles)) {
    const generated = secrets.profileTokens[name];
    const token = generated === undefined ? '(tokens from your config)' : `Authorization: Bearer ${generated}`;
    out(
      `  profile ${name}  ${token}  [services: ${profile.services.join(', ') || 'none'}; mode ${profile.mode}${profile.readOnly ? ', read-only' : ''}]`,
    );
  }
  out(
    secrets.generated.includes('admin')
      ? `  admin token   ${secrets.adminToken}   (shown once; kept in ${context.dataDir}/secrets.json)`
      : `  admin token   ${config.adminToken === undefined ? `in ${context.dataDir}/secrets.json` : 'from your config'}`,
  );
  out(`  console       ${url}/   (sign in with the admin token)`);
  out(`  data          ${context.dataDir}   (SQLite toolgate.db, workspaces/)`);
  out(`  config        ${context.configSource}`);
  for (const [name, state] of Object.entries(gateway.registry.serviceStates())) {
    const tools = [...gateway.registry.catalogue().entries.values()].filter((entry) => entry.service === name).length;
    out(
      `  service ${name}: ${state.state}${state.state === 'up' ? ` (${tools} tools, protocol ${state.protocolVersion ?? '?'})` : ` — ${state.error ?? ''}`}`,
    );
  }

  return {
    gateway,
    url,
    async close() {
      await mcp.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gateway.close();
    },
  };
}

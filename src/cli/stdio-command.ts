import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { createGateway } from '../gateway.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { Logger } from '../log/logger.js';
import type { CallerContext } from '../pipeline/call-pipeline.js';
import type { CliContext } from './cli-context.js';

/** One client over stdio: stdout carries only MCP, every log line goes to stderr. */
export async function runStdio(context: CliContext, profileName: string, logger: Logger): Promise<() => Promise<void>> {
  const profile = context.config.profiles[profileName];
  if (profile === undefined) {
    throw new GatewayError(
      'config_invalid',
      `no profile named "${profileName}" (profiles: ${Object.keys(context.config.profiles).join(', ')})`,
    );
  }
  const gateway = await createGateway({ ...context, logger });
  await gateway.registry.start();
  const caller: CallerContext = {
    profileName,
    profile,
    sessionId: `${profileName}/stdio-${process.pid}-${Date.now()}`,
  };
  gateway.sessionSeen(caller, 'stdio');
  const servers = new Set<ReturnType<typeof gateway.createServer>>();
  gateway.registry.onCatalogueChange(() => {
    for (const server of servers) void server.sendToolListChanged().catch(() => undefined);
  });
  const handle = serveStdio(() => {
    const server = gateway.createServer(caller);
    servers.add(server);
    return server;
  });
  return async () => {
    await handle.close();
    await gateway.close();
  };
}

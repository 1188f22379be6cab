import { ResourceNotFoundError, Server } from '@modelcontextprotocol/server';
import type { CallToolResult, ServerContext, Tool } from '@modelcontextprotocol/server';
import { describeForClient } from '../errors/gateway-error.js';
import type { CallerContext, CallPipeline } from '../pipeline/call-pipeline.js';
import type { BuiltinTool } from './builtin-tool.js';

export interface GatewayServerDeps {
  pipeline: CallPipeline;
  builtins: (caller: CallerContext) => BuiltinTool[];
  resources: WorkspaceResources;
  version: string;
}

/** The workspace as MCP resources, so a client without the gateway's disk can read what replies name. */
export interface WorkspaceResources {
  list(sessionId: string): Promise<Array<{ uri: string; name: string; mimeType: string }>>;
  read(
    sessionId: string,
    uri: string,
  ): Promise<{ uri: string; mimeType: string; text: string } | { uri: string; mimeType: string; blob: string }>;
}

/** Upstream output schemas are not re-advertised: a result cut for the model has no structured content. */
function offeredDefinition(definition: Tool): Tool {
  const { outputSchema: _outputSchema, ...rest } = definition;
  return rest;
}

function progressReporter(
  ctx: ServerContext,
  progressToken: string | number | undefined,
): ((progress: { progress: number; total?: number; message?: string }) => void) | undefined {
  if (progressToken === undefined) return undefined;
  return (progress) => {
    void ctx.mcpReq
      .notify({ method: 'notifications/progress', params: { progressToken, ...progress } })
      .catch(() => undefined);
  };
}

/** One low-level MCP server for one caller (profile + session); every tools/call goes through the pipeline. */
export function createGatewayServer(deps: GatewayServerDeps, caller: CallerContext): Server {
  const server = new Server(
    { name: 'toolgate', version: deps.version },
    {
      capabilities: { tools: { listChanged: true }, resources: {} },
      instructions:
        'toolgate offers third-party tools as <service>__<tool> under one policy. For bulk work (many calls, ' +
        'aggregation) use run_script; files named in replies are readable with read_workspace_file.',
    },
  );

  server.setRequestHandler('tools/list', () => ({
    tools: [
      ...deps.builtins(caller).map((builtin) => builtin.definition),
      ...deps.pipeline.offeredTools(caller).map((entry) => offeredDefinition(entry.definition)),
    ],
  }));

  server.setRequestHandler('tools/call', async (request, ctx): Promise<CallToolResult> => {
    const { name } = request.params;
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    const onProgress = progressReporter(ctx, request.params._meta?.progressToken);
    const builtin = deps.builtins(caller).find((candidate) => candidate.definition.name === name);
    if (builtin !== undefined) {
      try {
        return await builtin.call(args, {
          signal: ctx.mcpReq.signal,
          ...(onProgress === undefined ? {} : { onProgress }),
        });
      } catch (error) {
        return { content: [{ type: 'text', text: describeForClient(error) }], isError: true };
      }
    }
    return deps.pipeline.callDirect(caller, name, args, {
      signal: ctx.mcpReq.signal,
      ...(onProgress === undefined ? {} : { onProgress }),
    });
  });

  server.setRequestHandler('resources/list', async () => ({
    resources: await deps.resources.list(caller.sessionId),
  }));

  server.setRequestHandler('resources/read', async (request) => {
    try {
      return { contents: [await deps.resources.read(caller.sessionId, request.params.uri)] };
    } catch (error) {
      throw new ResourceNotFoundError(request.params.uri, describeForClient(error));
    }
  });

  return server;
}

import {
  CLIENT_CAPABILITIES_META_KEY,
  ResourceNotFoundError,
  Server,
  inputRequired,
  inputResponse,
} from '@modelcontextprotocol/server';
import type { ClientCapabilities, RequestStateCodec } from '@modelcontextprotocol/server';
import type { CallToolResult, ServerContext, Tool } from '@modelcontextprotocol/server';
import { describeForClient, isGatewayError } from '../errors/gateway-error.js';
import type { ApprovalBinding, ApprovalChannelHint, ElicitAnswer } from '../pipeline/ports.js';
import type { ElicitationForwarder } from '../upstream/service-connection.js';
import type { ApprovalOption } from '../policy/policy.js';
import type { CallerContext, CallPipeline } from '../pipeline/call-pipeline.js';
import type { BuiltinTool } from './builtin-tool.js';

export interface GatewayServerDeps {
  pipeline: CallPipeline;
  /** Finished background results waiting for this session's next tool result. */
  background: { takeForNextResult(sessionId: string): Promise<string[]> };
  /** Signs the 2026-era approval binding that travels through the client between call and retry. */
  approvalState: RequestStateCodec<ApprovalBinding>;
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

const optionTitles: Record<ApprovalOption, string> = {
  allow_once: 'Allow once',
  allow_session: 'Allow for this session',
  deny: 'Deny',
};

function decisionSchema(options: ApprovalOption[]) {
  return {
    type: 'object' as const,
    properties: {
      decision: {
        type: 'string' as const,
        title: 'Decision',
        oneOf: options.map((option) => ({ const: option, title: optionTitles[option] })),
      },
    },
    required: ['decision'],
  };
}

function answerOf(
  action: string,
  content: Record<string, unknown> | undefined,
  options: ApprovalOption[],
): ElicitAnswer {
  const decision = content?.decision;
  if (action !== 'accept' || typeof decision !== 'string') return 'declined';
  return (options as string[]).includes(decision) ? (decision as ApprovalOption) : 'declined';
}

/** The in-band way to ask this client, when it declared elicitation: a request (2025) or input-required (2026). */
function clientEra(server: Server, ctx: ServerContext): { modern: boolean; elicitation: boolean } {
  const modern = ctx.mcpReq.envelope !== undefined && Object.keys(ctx.mcpReq.envelope).length > 0;
  const capabilities = modern
    ? (ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY as keyof typeof ctx.mcpReq.envelope] as
        ClientCapabilities | undefined)
    : server.getClientCapabilities();
  return { modern, elicitation: capabilities?.elicitation !== undefined };
}

/**
 * A service's own question during a direct call reaches a 2025-era client that declared elicitation; a
 * 2026-era client cannot be sent a request mid-call, so for it (and inside scripts) the service is declined.
 */
function elicitationForwarder(server: Server, ctx: ServerContext): ElicitationForwarder | undefined {
  const { modern, elicitation } = clientEra(server, ctx);
  if (modern || !elicitation) return undefined;
  return (params) => ctx.mcpReq.elicitInput(params, { signal: ctx.mcpReq.signal, timeout: 24 * 3600 * 1000 });
}

function approvalChannel(server: Server, ctx: ServerContext): ApprovalChannelHint {
  const { modern, elicitation } = clientEra(server, ctx);
  if (!elicitation) return {};
  if (modern) {
    const state = ctx.mcpReq.requestState<ApprovalBinding>();
    const view = inputResponse(ctx.mcpReq.inputResponses, 'approval');
    return {
      inputRequired: {
        state,
        answer:
          view.kind === 'elicit'
            ? answerOf(view.action, view.content, ['allow_once', 'allow_session', 'deny'])
            : undefined,
      },
    };
  }
  return {
    elicit: async (message, options, signal) => {
      const result = await ctx.mcpReq.elicitInput(
        { mode: 'form', message, requestedSchema: decisionSchema(options) },
        { ...(signal === undefined ? {} : { signal }), timeout: 24 * 3600 * 1000 },
      );
      return answerOf(result.action, result.content, options);
    },
  };
}

/** Delivery as a new message: finished background results ride along, clearly marked, with the next reply. */
function withBackgroundResults(result: CallToolResult, notes: string[]): CallToolResult {
  if (notes.length === 0) return result;
  return { ...result, content: [...result.content, ...notes.map((text) => ({ type: 'text' as const, text }))] };
}

/** One low-level MCP server for one caller (profile + session); every tools/call goes through the pipeline. */
export function createGatewayServer(deps: GatewayServerDeps, caller: CallerContext): Server {
  const server = new Server(
    { name: 'toolgate', version: deps.version },
    {
      requestState: { verify: (state, ctx) => deps.approvalState.verify(state, ctx) },
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
    const forwardElicitation = elicitationForwarder(server, ctx);
    const options = {
      signal: ctx.mcpReq.signal,
      approvalChannel: approvalChannel(server, ctx),
      ...(onProgress === undefined ? {} : { onProgress }),
      ...(forwardElicitation === undefined ? {} : { forwardElicitation }),
    };
    try {
      const result =
        builtin === undefined
          ? await deps.pipeline.callDirect(caller, name, args, options)
          : await builtin.call(args, options);
      return withBackgroundResults(result, await deps.background.takeForNextResult(caller.sessionId));
    } catch (error) {
      if (!isGatewayError(error) || error.code !== 'input_required') {
        return { content: [{ type: 'text', text: describeForClient(error) }], isError: true };
      }
      const details = error.details as unknown as ApprovalBinding & { options: ApprovalOption[] };
      return inputRequired({
        inputRequests: {
          approval: inputRequired.elicit({ message: error.message, requestedSchema: decisionSchema(details.options) }),
        },
        requestState: await deps.approvalState.mint({
          approvalId: details.approvalId,
          binding: details.binding,
          sessionId: details.sessionId,
        }),
      }) as unknown as CallToolResult;
    }
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

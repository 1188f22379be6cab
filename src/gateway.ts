import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from './config/config-schema.js';
import { createReadFileTool, createWorkspaceResources } from './downstream/workspace-tools.js';
import { createRunScriptTool } from './script/run-script-tool.js';
import { ScriptEngine } from './script/script-engine.js';
import { BackgroundCalls } from './background/background-calls.js';
import { createBackgroundTool } from './background/background-tool.js';
import { WebhookSender } from './background/webhook-sender.js';
import type { BuiltinTool } from './downstream/builtin-tool.js';
import { createGatewayServer } from './downstream/gateway-server.js';
import { createEventBus, type EventBus } from './events/event-bus.js';
import type { Logger } from './log/logger.js';
import { CallPipeline, type CallerContext } from './pipeline/call-pipeline.js';
import type { ApprovalBinding } from './pipeline/ports.js';
import { ApprovalService } from './approvals/approval-service.js';
import { createRequestStateCodec } from '@modelcontextprotocol/server';
import { randomBytes } from 'node:crypto';
import { openWorkspaces, type Workspaces } from './sessions/workspace.js';
import { openSqliteStore, type Store } from './store/store.js';
import { ServiceRegistry } from './upstream/service-registry.js';
import type { Server } from '@modelcontextprotocol/server';

export const version = '0.1.0';

export interface Gateway {
  config: Config;
  dataDir: string;
  store: Store;
  events: EventBus;
  registry: ServiceRegistry;
  workspaces: Workspaces;
  pipeline: CallPipeline;
  approvals: ApprovalService;
  background: BackgroundCalls;
  createServer(caller: CallerContext): Server;
  builtins(caller: CallerContext): BuiltinTool[];
  sessionSeen(caller: CallerContext, client: string | undefined): void;
  close(): Promise<void>;
}

/** Wires the parts every entry point shares: store, services, pipeline, workspaces, built-in tools. */
export async function createGateway(options: {
  config: Config;
  dataDir: string;
  logger: Logger;
  environment: NodeJS.ProcessEnv;
}): Promise<Gateway> {
  const { config, dataDir, logger } = options;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const store = openSqliteStore(join(dataDir, 'toolgate.db'));
  const events = createEventBus((error) => logger.error('event listener failed', { error: String(error) }));
  const workspaces = await openWorkspaces(dataDir);
  const registry = new ServiceRegistry(config, { logger, events, environment: options.environment, version });
  const approvals = new ApprovalService({ store, events, logger, timeoutSec: config.settings.approvals.timeoutSec });
  const approvalState = createRequestStateCodec<ApprovalBinding>({
    key: randomBytes(32),
    ttlSeconds: Math.ceil(config.settings.approvals.timeoutSec),
  });
  const webhooks = new WebhookSender({ profiles: config.profiles, store, logger });
  const background = new BackgroundCalls({
    store,
    events,
    logger,
    webhooks,
    autoAfterMs: config.settings.backgroundCalls.autoAfterSec * 1000,
  });
  const pipeline = new CallPipeline({
    background,
    tools: registry,
    audit: {
      start: (record) => store.insertCall({ ...record, arguments: record.arguments as Record<string, unknown> }),
      finish: (id, record) => store.completeCall(id, record),
    },
    allowances: {
      get: async (sessionId, tool) => (await store.getAllowance(sessionId, tool))?.definitionHash,
      grant: (sessionId, tool, hash) => store.grantAllowance(sessionId, tool, hash, Date.now()),
    },
    approver: approvals,
    files: { write: (sessionId, path, data) => workspaces.writeFile(sessionId, path, data) },
    events,
    settings: config.settings,
    logger,
  });
  const resources = createWorkspaceResources(workspaces);
  const engine = new ScriptEngine({ dataDir, limits: config.settings.scripts, environment: options.environment });
  const scriptDeps = { pipeline, background, engine, workspaces, events, settings: config.settings.scripts };
  // run_script is offered only to profiles that have at least one third-party tool (seed §2).
  const builtins = (caller: CallerContext): BuiltinTool[] => [
    createReadFileTool(workspaces, caller.sessionId),
    createBackgroundTool(background, caller.sessionId),
    ...(pipeline.offeredTools(caller).length > 0 ? [createRunScriptTool(scriptDeps, caller)] : []),
  ];
  const lastSeen = new Map<string, number>();

  return {
    config,
    dataDir,
    store,
    events,
    registry,
    workspaces,
    pipeline,
    approvals,
    background,
    builtins,
    createServer: (caller) =>
      createGatewayServer({ pipeline, approvalState, builtins, resources, background, version }, caller),
    sessionSeen(caller, client) {
      const now = Date.now();
      // Touching the session row at most every few seconds keeps a busy client from writing on every request.
      if (now - (lastSeen.get(caller.sessionId) ?? 0) < 5_000) return;
      const first = !lastSeen.has(caller.sessionId);
      lastSeen.set(caller.sessionId, now);
      void store
        .upsertSession({
          id: caller.sessionId,
          profile: caller.profileName,
          ...(client === undefined ? {} : { client }),
          at: now,
        })
        .catch((error: unknown) => logger.error('session record failed', { error: String(error) }));
      if (first) {
        events.publish({
          type: 'session.seen',
          sessionId: caller.sessionId,
          profile: caller.profileName,
          ...(client === undefined ? {} : { client }),
        });
      }
    },
    async close() {
      background.close();
      approvals.close();
      await registry.close();
      await store.close();
    },
  };
}

import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { BuiltinCallOptions, BuiltinTool } from '../downstream/builtin-tool.js';
import { GatewayError, describeForClient, isGatewayError } from '../errors/gateway-error.js';
import type { EventBus } from '../events/event-bus.js';
import { statusOf, type CallPipeline, type CallerContext } from '../pipeline/call-pipeline.js';
import type { ApprovalOutcome, BackgroundRunner, ScriptRecordDetails } from '../pipeline/ports.js';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { ScriptSettings } from '../config/config-schema.js';
import type { Workspaces } from '../sessions/workspace.js';
import type { ScriptEngine } from './script-engine.js';
import { runScriptDescription } from './run-script-description.js';
import { buildScriptReply } from './script-reply.js';
import type { ScriptProgress } from './script-runner.js';

const argumentsSchema = z.object({
  code: z.string().min(1, 'code is the Python source to run').max(1_000_000, 'code is larger than 1 MB'),
  tools: z.array(z.string()).max(200).default([]),
  description: z.string().max(500).default(''),
});

export interface RunScriptDeps {
  pipeline: CallPipeline;
  background: BackgroundRunner;
  engine: ScriptEngine;
  workspaces: Workspaces;
  events: EventBus;
  settings: ScriptSettings;
}

function scriptId(): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

/** The audit's script details for a run that made no call. */
function notRun(description: string, code: string, detailsDir: string): ScriptRecordDetails {
  return { description, calls: 0, failures: 0, callsPerTool: {}, exitCode: null, detailsDir, content: code };
}

function errorReply(message: string) {
  return { content: [{ type: 'text' as const, text: `run_script not started: ${message}` }], isError: true };
}

/**
 * MCP progress must only grow: the script's own counter when it reported one, else the call count. A total is
 * sent only while the value is within it (the call count may already be past the script's own total).
 */
function progressForwarder(onProgress: BuiltinCallOptions['onProgress']): (progress: ScriptProgress) => void {
  let last = 0;
  return (progress) => {
    if (onProgress === undefined) return;
    const value = Math.max(last, progress.done ?? progress.calls);
    last = value;
    const parts = [`${progress.calls} calls (${progress.failures} failed)`, progress.message].filter(
      (part) => part !== '',
    );
    onProgress({
      progress: value,
      ...(progress.total === null || value > progress.total ? {} : { total: progress.total }),
      message: parts.join(' · '),
    });
  };
}

/** The gateway's run_script tool: check and approve, then run in the sandbox, record, and reply. */
export function createRunScriptTool(deps: RunScriptDeps, caller: CallerContext): BuiltinTool {
  return {
    definition: {
      name: 'run_script',
      title: 'Run a Python script that calls the tools',
      description: runScriptDescription(deps.settings),
      inputSchema: {
        type: 'object',
        properties: {
          code: { type: 'string', description: 'Python 3 source; import from agent_tools; print the summary you need' },
          tools: {
            type: 'array',
            items: { type: 'string' },
            description: 'the write tools the script may call (read tools need no listing)',
          },
          description: { type: 'string', description: 'one line saying what the script does (shown to the user)' },
        },
        required: ['code', 'description'],
      },
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    },
    async call(args, options) {
      const parsed = argumentsSchema.safeParse(args);
      if (!parsed.success) {
        return errorReply(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '));
      }
      const { code, tools, description } = parsed.data;
      const startedAt = Date.now();
      let listed: ReadonlySet<string>;
      let approval: ApprovalOutcome | undefined;
      try {
        ({ listed, approval } = await deps.pipeline.authoriseScript(
          caller,
          tools,
          { code, description },
          {
            signal: options.signal,
            ...(options.approvalChannel === undefined ? {} : { approvalChannel: options.approvalChannel }),
          },
        ));
      } catch (error) {
        if (isGatewayError(error) && error.code === 'input_required') throw error;
        const message = describeForClient(error);
        const recordId = await deps.pipeline.startRecord(
          caller,
          'run_script',
          { description, tools },
          startedAt,
          'script',
        );
        await deps.pipeline.finishRecord(caller, recordId, 'run_script', startedAt, {
          // A client that gave up while the approval was pending is `cancelled`, as for a direct call.
          status: statusOf(error),
          summary: `not started: ${message}`.slice(0, 200),
          error: message,
          approval,
          script: notRun(description, code, ''),
        });
        return isGatewayError(error) && error.code === 'not_allowed'
          ? { content: [{ type: 'text', text: message }], isError: true }
          : errorReply(message);
      }
      const id = scriptId();
      const recordId = await deps.pipeline.startRecord(
        caller,
        'run_script',
        { description, tools },
        startedAt,
        'script',
      );
      const forward = progressForwarder(options.onProgress);
      const execute = async (signal: AbortSignal): Promise<CallToolResult> => {
        try {
          const workspaceDir = await deps.workspaces.ensure(caller.sessionId);
          const outcome = await deps.engine.run({
            code,
            scriptId: id,
            workspaceDir,
            readOnly: caller.profile.readOnly,
            signal,
            callTool: (tool, toolArgs, signal) => deps.pipeline.callFromScript(caller, listed, tool, toolArgs, signal),
            onProgress: (progress) => {
              deps.events.publish({
                type: 'script.progress',
                sessionId: caller.sessionId,
                scriptId: id,
                calls: progress.calls,
                failures: progress.failures,
                ...(progress.done === null ? {} : { done: progress.done }),
                ...(progress.total === null ? {} : { total: progress.total }),
                ...(progress.message === '' ? {} : { message: progress.message }),
                elapsedMs: progress.elapsedMs,
                status: progress.status,
              });
              forward(progress);
            },
          });
          const reply = buildScriptReply(outcome);
          const statusMap = { ok: 'ok', failed: 'error', 'timed out': 'timeout', cancelled: 'cancelled' } as const;
          await deps.pipeline.finishRecord(caller, recordId, 'run_script', startedAt, {
            status: statusMap[outcome.status],
            summary: reply.content[0].text.split('\n')[0] ?? '',
            approval,
            script: {
              description,
              calls: outcome.calls,
              failures: outcome.failures,
              callsPerTool: outcome.callsPerTool,
              exitCode: outcome.exitCode,
              detailsDir: outcome.detailsDir,
              content: code,
            },
          });
          return { ...reply, structuredContent: { ...reply.structuredContent } };
        } catch (error) {
          const message = describeForClient(error);
          await deps.pipeline.finishRecord(caller, recordId, 'run_script', startedAt, {
            status: 'error',
            summary: `error: ${message}`.slice(0, 200),
            error: message,
            approval,
            script: notRun(description, code, `.agent/scripts/${id}/`),
          });
          if (isGatewayError(error)) return errorReply(message);
          throw new GatewayError('internal', 'run_script failed inside the gateway', { cause: error });
        }
      };
      return deps.background.run(
        {
          sessionId: caller.sessionId,
          profile: caller.profileName,
          kind: 'script',
          tool: 'run_script',
          callId: recordId,
          scriptId: id,
          clientSignal: options.signal,
          immediately: false,
        },
        execute,
      );
    },
  };
}

import type { CallToolResult } from '@modelcontextprotocol/client';
import type { CatalogueEntry } from '../catalogue/catalogue.js';
import { splitToolName } from '../catalogue/tool-names.js';
import type { Profile, Settings } from '../config/config-schema.js';
import { GatewayError, describeForClient, isGatewayError } from '../errors/gateway-error.js';
import type { EventBus } from '../events/event-bus.js';
import type { Logger } from '../log/logger.js';
import { checkScriptToolList, decideDirectCall, decideScriptCall, isOffered } from '../policy/policy.js';
import type { ElicitationForwarder } from '../upstream/service-connection.js';
import type { ToolSource } from '../upstream/service-registry.js';
import { fitResult } from './fit-result.js';
import { normaliseResult, summariseResult, type NormalisedResult } from './normalise-result.js';
import type {
  ApprovalChannelHint,
  ApprovalOutcome,
  Approver,
  BackgroundRunner,
  Allowances,
  AuditLog,
  CallRecordFinish,
  ScriptRecordDetails,
  WorkspaceFiles,
} from './ports.js';

export interface CallerContext {
  profileName: string;
  profile: Profile;
  sessionId: string;
}

export interface DirectCallOptions {
  signal?: AbortSignal;
  /** The calling client's elicitation, for a service that asks a question during the call. */
  forwardElicitation?: ElicitationForwarder;
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
  approvalChannel?: ApprovalChannelHint;
}

export interface PipelineDeps {
  tools: ToolSource;
  background: BackgroundRunner;
  audit: AuditLog;
  allowances: Allowances;
  approver: Approver;
  files: WorkspaceFiles;
  events: EventBus;
  settings: Settings;
  logger: Logger;
}

function errorResult(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** The audit status of a call that ended with `error`, the same for direct calls and scripts. */
export function statusOf(error: unknown): 'error' | 'denied' | 'expired' | 'cancelled' | 'timeout' {
  if (!isGatewayError(error)) return 'error';
  switch (error.code) {
    case 'denied':
      return 'denied';
    case 'approval_expired':
      return 'expired';
    case 'cancelled':
      return 'cancelled';
    case 'timeout':
      return 'timeout';
    default:
      return 'error';
  }
}

/** The one pipeline of PRODUCT.md §3: resolve → offered → class rules → approval → call → normalise → record. */
export class CallPipeline {
  constructor(private readonly deps: PipelineDeps) {}

  /** The tools this caller may see in tools/list. */
  offeredTools(caller: CallerContext): CatalogueEntry[] {
    return [...this.deps.tools.catalogue().entries.values()].filter(
      (entry) => caller.profile.services.includes(entry.service) && isOffered(entry, caller.profile),
    );
  }

  /** Only the caller's own services resolve; another profile's tool is as unknown as a typo. */
  resolve(caller: CallerContext, name: string): CatalogueEntry {
    const entry = this.deps.tools.catalogue().entries.get(name);
    if (entry === undefined || !caller.profile.services.includes(entry.service)) {
      const service = splitToolName(name)?.service ?? '';
      const down =
        caller.profile.services.includes(service) && this.deps.tools.serviceStates()[service]?.state !== 'up';
      throw down
        ? new GatewayError('unavailable', `service ${service} is down; tool ${name} is unavailable until it reconnects`)
        : new GatewayError('unknown_tool', `unknown tool ${name}`);
    }
    return entry;
  }

  async callDirect(
    caller: CallerContext,
    name: string,
    args: Record<string, unknown>,
    options: DirectCallOptions = {},
  ): Promise<CallToolResult> {
    const startedAt = Date.now();
    let entry: CatalogueEntry;
    let approval: ApprovalOutcome | undefined;
    let background: boolean;
    try {
      entry = this.resolve(caller, name);
      ({ approval, background } = await this.authorise(caller, entry, args, options));
    } catch (error) {
      // A 2026-era approval question is not a finished call: the client retries with the answer.
      if (isGatewayError(error) && error.code === 'input_required') throw error;
      return this.failRecord(
        caller,
        await this.startRecord(caller, name, args, startedAt),
        name,
        startedAt,
        error,
        approval,
      );
    }
    const recordId = await this.startRecord(caller, name, args, startedAt);
    const start = {
      sessionId: caller.sessionId,
      profile: caller.profileName,
      kind: 'call' as const,
      tool: name,
      callId: recordId,
      immediately: background,
      ...(options.signal === undefined ? {} : { clientSignal: options.signal }),
    };
    return this.deps.background.run(start, (signal) =>
      this.runUpstream(caller, entry, args, { ...options, signal }, { recordId, startedAt, approval }),
    );
  }

  /** The upstream part of a direct call, which may outlive the client's request as a background call. */
  private async runUpstream(
    caller: CallerContext,
    entry: CatalogueEntry,
    args: Record<string, unknown>,
    options: DirectCallOptions & { signal: AbortSignal },
    record: { recordId: number; startedAt: number; approval: ApprovalOutcome | undefined },
  ): Promise<CallToolResult> {
    const { recordId, startedAt, approval } = record;
    const name = entry.name;
    try {
      const result = normaliseResult(
        await this.deps.tools.callTool(entry, args, {
          timeoutMs: this.deps.settings.calls.timeoutSec * 1000,
          signal: options.signal,
          ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
          ...(options.forwardElicitation === undefined ? {} : { forwardElicitation: options.forwardElicitation }),
        }),
      );
      const fullPath = `.agent/results/${recordId}-${entry.upstreamName.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`;
      const fitted = fitResult(result, this.deps.settings.results.maxChars, fullPath);
      if (fitted.cut) {
        await this.deps.files.write(caller.sessionId, fullPath, JSON.stringify(result, null, 2));
      }
      await this.finishRecord(caller, recordId, name, startedAt, {
        status: result.isError ? 'error' : 'ok',
        summary: summariseResult(result),
        approval,
      });
      return {
        content: [{ type: 'text', text: fitted.text }],
        ...(fitted.structured === undefined ? {} : { structuredContent: fitted.structured }),
        ...(result.isError ? { isError: true } : {}),
      };
    } catch (error) {
      if (!isGatewayError(error)) this.deps.logger.error(`call ${name} failed`, { error: String(error) });
      return this.failRecord(caller, recordId, name, startedAt, error, approval);
    }
  }

  /** Closes a call's record as failed and gives the client the error, never an internal detail. */
  private async failRecord(
    caller: CallerContext,
    recordId: number,
    tool: string,
    startedAt: number,
    error: unknown,
    approval: ApprovalOutcome | undefined,
  ): Promise<CallToolResult> {
    const message = describeForClient(error);
    await this.finishRecord(caller, recordId, tool, startedAt, {
      status: statusOf(error),
      summary: `error: ${message}`.slice(0, 200),
      error: message,
      approval,
    });
    return errorResult(message);
  }

  /** Opens the `gateway_call` record of a direct call or (kind `script`) of a whole run_script. */
  async startRecord(
    caller: CallerContext,
    tool: string,
    args: unknown,
    startedAt: number,
    kind: 'call' | 'script' = 'call',
  ): Promise<number> {
    const recordId = await this.deps.audit.start({
      profile: caller.profileName,
      sessionId: caller.sessionId,
      kind,
      tool,
      arguments: args,
      startedAt,
    });
    this.deps.events.publish({
      type: 'call.started',
      callId: recordId,
      sessionId: caller.sessionId,
      profile: caller.profileName,
      tool,
      arguments: args,
    });
    return recordId;
  }

  async finishRecord(
    caller: CallerContext,
    recordId: number,
    tool: string,
    startedAt: number,
    outcome: {
      status: CallRecordFinish['status'];
      summary: string;
      error?: string;
      approval: ApprovalOutcome | undefined;
      script?: ScriptRecordDetails;
    },
  ): Promise<void> {
    const durationMs = Date.now() - startedAt;
    await this.deps.audit.finish(recordId, {
      status: outcome.status,
      durationMs,
      resultSummary: outcome.summary,
      ...(outcome.error === undefined ? {} : { error: outcome.error }),
      ...(outcome.approval === undefined ? {} : { approval: outcome.approval }),
      ...(outcome.script === undefined ? {} : { script: outcome.script }),
    });
    this.deps.events.publish({
      type: 'call.finished',
      callId: recordId,
      sessionId: caller.sessionId,
      profile: caller.profileName,
      tool,
      status: outcome.status,
      durationMs,
      summary: outcome.summary,
    });
  }

  /** A call from inside a script: same resolution and upstream path, script rules, full result, no record. */
  async callFromScript(
    caller: CallerContext,
    listed: ReadonlySet<string>,
    name: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<NormalisedResult> {
    const entry = this.resolve(caller, name);
    const decision = decideScriptCall(entry, caller.profile, listed);
    if (decision.kind === 'refuse') throw new GatewayError('not_allowed', decision.reason);
    return normaliseResult(
      await this.deps.tools.callTool(entry, args, {
        timeoutMs: this.deps.settings.calls.timeoutSec * 1000,
        ...(signal === undefined ? {} : { signal }),
      }),
    );
  }

  /**
   * run_script's permission step (seed §4): every listed tool is checked before the run; in `approve` mode
   * one approval covers the listed write tools (allow once / deny), skipped when all are allowed for this
   * session. Returns the listed tools as a set, and the approval when one was given.
   */
  async authoriseScript(
    caller: CallerContext,
    listed: readonly string[],
    script: { code: string; description: string },
    options: DirectCallOptions = {},
  ): Promise<{ listed: ReadonlySet<string>; approval: ApprovalOutcome | undefined }> {
    const entries = this.deps.tools.catalogue().entries;
    const lookup = (name: string): CatalogueEntry | undefined => {
      const entry = entries.get(name);
      return entry !== undefined && caller.profile.services.includes(entry.service) ? entry : undefined;
    };
    const problems = checkScriptToolList(listed, lookup, caller.profile);
    if (problems.length > 0) {
      throw new GatewayError('not_allowed', `run_script rejected before it started: ${problems.join('; ')}`);
    }
    const writes = [...new Set(listed)]
      .map((name) => lookup(name))
      .filter((entry) => entry?.class === 'write') as CatalogueEntry[];
    if (caller.profile.mode === 'auto' || writes.length === 0) return { listed: new Set(listed), approval: undefined };
    const allowed = await Promise.all(
      writes.map(
        async (entry) => (await this.deps.allowances.get(caller.sessionId, entry.name)) === entry.definitionHash,
      ),
    );
    if (allowed.every(Boolean)) return { listed: new Set(listed), approval: undefined };
    const outcome = await this.deps.approver.request(
      {
        sessionId: caller.sessionId,
        profile: caller.profileName,
        kind: 'script',
        tools: writes.map((entry) => entry.name),
        script: script.code,
        description: script.description,
        definitionHash: writes.map((entry) => entry.definitionHash).join(','),
        options: ['allow_once', 'deny'],
      },
      options.approvalChannel ?? {},
      options.signal,
    );
    if (outcome.decision === 'allow_once') return { listed: new Set(listed), approval: outcome };
    if (outcome.decision === 'expired') {
      throw new GatewayError(
        'approval_expired',
        `approval for the script expired after ${Math.round(outcome.waitedMs / 1000)} s with no decision`,
      );
    }
    throw new GatewayError('denied', `the script was denied by ${outcome.decidedBy} (${outcome.channel})`);
  }

  private async authorise(
    caller: CallerContext,
    entry: CatalogueEntry,
    args: Record<string, unknown>,
    options: DirectCallOptions,
  ): Promise<{ approval: ApprovalOutcome | undefined; background: boolean }> {
    const allowedHash = await this.deps.allowances.get(caller.sessionId, entry.name);
    const decision = decideDirectCall(entry, caller.profile, {
      allowedForSession: allowedHash === entry.definitionHash,
    });
    if (decision.kind === 'refuse') throw new GatewayError('not_offered', decision.reason);
    if (decision.kind === 'run') return { approval: undefined, background: decision.background };
    const outcome = await this.deps.approver.request(
      {
        sessionId: caller.sessionId,
        profile: caller.profileName,
        kind: 'call',
        tools: [entry.name],
        arguments: args,
        definitionHash: entry.definitionHash,
        options: decision.options,
      },
      options.approvalChannel ?? {},
      options.signal,
    );
    switch (outcome.decision) {
      case 'allow_session':
        await this.deps.allowances.grant(caller.sessionId, entry.name, entry.definitionHash);
        return { approval: outcome, background: decision.background };
      case 'allow_once':
        return { approval: outcome, background: decision.background };
      case 'deny':
        throw new GatewayError('denied', `call to ${entry.name} denied by ${outcome.decidedBy} (${outcome.channel})`);
      case 'expired':
        throw new GatewayError(
          'approval_expired',
          `approval for ${entry.name} expired after ${Math.round(outcome.waitedMs / 1000)} s with no decision`,
        );
    }
  }
}

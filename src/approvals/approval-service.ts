import { createHash, randomBytes } from 'node:crypto';
import { canonicalJson } from '../catalogue/catalogue.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { EventBus } from '../events/event-bus.js';
import type { Logger } from '../log/logger.js';
import type { ApprovalChannelHint, ApprovalOutcome, ApprovalRequest, Approver } from '../pipeline/ports.js';
import type { Store } from '../store/store.js';
import type { Approval, ApprovalChannel, ApprovalDecision, ApprovalOption } from '../store/store-records.js';

export interface DecideInput {
  decision: ApprovalOption;
  decidedBy: string;
  channel: Exclude<ApprovalChannel, 'timeout' | 'withdrawn'>;
  /** When given (elicitation), the approval must belong to this session. */
  sessionId?: string;
}

interface Waiter {
  resolve: (outcome: ApprovalOutcome) => void;
  createdAt: number;
}

const pollMs = 500;

/**
 * Asks a person and waits. Decisions come from the calling client's elicitation, the console and API (this
 * process) or the CLI (another process, through the store, noticed by polling); the store's conditional
 * update makes the first decision win whichever channel it comes from.
 */
export class ApprovalService implements Approver {
  private readonly waiters = new Map<string, Waiter>();
  private readonly poller: NodeJS.Timeout;

  constructor(
    private readonly deps: { store: Store; events: EventBus; logger: Logger; timeoutSec: number; now?: () => number },
  ) {
    this.poller = setInterval(() => void this.pollDecisions(), pollMs);
    this.poller.unref();
  }

  close(): void {
    clearInterval(this.poller);
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** Records a pending approval without waiting (the 2026 era returns input-required and waits for a retry). */
  async open(request: ApprovalRequest): Promise<Approval> {
    const createdAt = this.now();
    const approval = {
      id: `apr_${randomBytes(9).toString('base64url')}`,
      sessionId: request.sessionId,
      profile: request.profile,
      kind: request.kind,
      tools: request.tools,
      arguments: request.kind === 'call' ? ((request.arguments ?? {}) as Record<string, unknown>) : null,
      script: request.script ?? null,
      definitionHash: request.definitionHash,
      createdAt,
      expiresAt: createdAt + this.deps.timeoutSec * 1000,
      description: request.description ?? null,
      options: request.options,
    };
    await this.deps.store.upsertSession({ id: request.sessionId, profile: request.profile, at: createdAt });
    await this.deps.store.insertApproval(approval);
    this.deps.events.publish({ type: 'approval.requested', approvalId: approval.id, sessionId: request.sessionId });
    return { ...approval, decidedAt: null, decision: null, decidedBy: null, channel: null };
  }

  async request(
    request: ApprovalRequest,
    channel: ApprovalChannelHint,
    signal?: AbortSignal,
  ): Promise<ApprovalOutcome> {
    const retry = channel.inputRequired;
    if (retry === undefined) return this.wait(await this.open(request), channel, signal);
    const binding = bindingOf(request);
    const state = retry.state;
    // A retry is bound to its session, tool(s) and exact arguments: anything else is a new question.
    if (state !== undefined && state.sessionId === request.sessionId && state.binding === binding) {
      const approval = await this.deps.store.getApproval(state.approvalId);
      if (approval !== undefined) {
        if (approval.decision === null && retry.answer !== undefined) {
          const decision = retry.answer === 'declined' ? 'deny' : retry.answer;
          await this.decide(approval.id, { decision, decidedBy: 'client user', channel: 'elicitation' }).catch(
            (error: unknown) =>
              this.deps.logger.info(`elicitation answer for ${approval.id} not applied: ${String(error)}`),
          );
        }
        return this.wait((await this.deps.store.getApproval(approval.id)) ?? approval, {}, signal);
      }
    }
    const approval = await this.open(request);
    throw new GatewayError('input_required', describeApproval(approval), {
      details: { approvalId: approval.id, binding, sessionId: request.sessionId, options: approval.options },
    });
  }

  /** Waits for the first decision on an open approval; expiry counts as deny, a withdrawn call decides deny. */
  wait(approval: Approval, channel: ApprovalChannelHint, signal?: AbortSignal): Promise<ApprovalOutcome> {
    if (approval.decision !== null) return Promise.resolve(outcomeOf(approval, approval.createdAt, this.now()));
    return new Promise<ApprovalOutcome>((resolve, reject) => {
      const elicitAbort = new AbortController();
      const cleanup = (): void => {
        clearTimeout(expiry);
        signal?.removeEventListener('abort', onAbort);
        elicitAbort.abort();
        this.waiters.delete(approval.id);
      };
      this.waiters.set(approval.id, {
        createdAt: approval.createdAt,
        resolve: (outcome) => {
          cleanup();
          resolve(outcome);
        },
      });
      const expiry = setTimeout(
        () => void this.settle(approval.id, { decision: 'expired', decidedBy: 'gateway', channel: 'timeout' }),
        Math.max(0, approval.expiresAt - this.now()),
      );
      const onAbort = (): void => {
        cleanup();
        void this.settle(approval.id, {
          decision: 'deny',
          decidedBy: 'gateway (call withdrawn)',
          channel: 'withdrawn',
        });
        reject(new GatewayError('cancelled', `the call was withdrawn while waiting for approval ${approval.id}`));
      };
      if (signal?.aborted === true) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      if (channel.elicit !== undefined) {
        const options = approval.options;
        channel
          .elicit(describeApproval(approval), options, elicitAbort.signal)
          .then((answer) => {
            if (answer === 'declined')
              return this.decide(approval.id, { decision: 'deny', decidedBy: 'client user', channel: 'elicitation' });
            return this.decide(approval.id, { decision: answer, decidedBy: 'client user', channel: 'elicitation' });
          })
          .catch((error: unknown) => {
            // A client that cannot answer leaves the decision to the console, API or CLI.
            if (!elicitAbort.signal.aborted)
              this.deps.logger.info(`elicitation for ${approval.id} gave no answer: ${String(error)}`);
          });
      }
    });
  }

  /** A person's decision from any channel; the first one wins, a later one gets a clear `conflict`. */
  async decide(id: string, input: DecideInput): Promise<Approval> {
    const approval = await this.deps.store.getApproval(id);
    if (approval === undefined) throw new GatewayError('not_found', `no approval ${id}`);
    if (input.sessionId !== undefined && approval.sessionId !== input.sessionId) {
      throw new GatewayError('not_found', `no approval ${id}`);
    }
    if (!approval.options.includes(input.decision)) {
      throw new GatewayError(
        'invalid_args',
        `approval ${id} offers only ${approval.options.join(', ')}; "${input.decision}" is not one of them`,
      );
    }
    return this.settle(id, input);
  }

  private async settle(
    id: string,
    input: { decision: ApprovalDecision; decidedBy: string; channel: ApprovalChannel },
  ): Promise<Approval> {
    const result = await this.deps.store.decideApproval(id, { ...input, at: this.now() });
    if (!result.ok) {
      if (result.reason === 'not_found') throw new GatewayError('not_found', `no approval ${id}`);
      const earlier = result.approval;
      this.notify(earlier);
      throw new GatewayError(
        'conflict',
        `approval ${id} was already decided: ${earlier.decision ?? '?'} by ${earlier.decidedBy ?? '?'} via ${earlier.channel ?? '?'}`,
      );
    }
    this.deps.events.publish({
      type: 'approval.decided',
      approvalId: id,
      sessionId: result.approval.sessionId,
      decision: input.decision,
      channel: input.channel,
    });
    this.notify(result.approval);
    return result.approval;
  }

  private notify(approval: Approval): void {
    const waiter = this.waiters.get(approval.id);
    if (waiter === undefined || approval.decision === null) return;
    waiter.resolve(outcomeOf(approval, waiter.createdAt, this.now()));
  }

  /** Decisions written by another process (the CLI) reach the waiting call here. */
  private async pollDecisions(): Promise<void> {
    for (const id of [...this.waiters.keys()]) {
      const approval = await this.deps.store.getApproval(id).catch(() => undefined);
      if (approval?.decision !== null && approval !== undefined) {
        this.deps.events.publish({
          type: 'approval.decided',
          approvalId: id,
          sessionId: approval.sessionId,
          decision: approval.decision,
          channel: approval.channel ?? 'cli',
        });
        this.notify(approval);
      }
    }
  }
}

function outcomeOf(approval: Approval, createdAt: number, now: number): ApprovalOutcome {
  return {
    decision: approval.decision ?? 'deny',
    decidedBy: approval.decidedBy ?? 'unknown',
    channel: approval.channel ?? 'api',
    waitedMs: (approval.decidedAt ?? now) - createdAt,
  };
}

/** Binds an approval to what it approves: session, tool(s), exact arguments or script, and definitions. */
export function bindingOf(request: ApprovalRequest): string {
  return createHash('sha256')
    .update(
      canonicalJson([
        request.sessionId,
        request.tools,
        request.arguments ?? null,
        request.script ?? null,
        request.definitionHash,
      ]),
    )
    .digest('hex');
}

/** The one-paragraph question a person sees, whatever the channel. */
export function describeApproval(
  approval: Pick<Approval, 'kind' | 'tools' | 'arguments' | 'description' | 'options'>,
): string {
  if (approval.kind === 'script') {
    return (
      `toolgate: run a script${approval.description === null ? '' : ` ("${approval.description}")`} that may call ` +
      `the write tools ${approval.tools.join(', ')}? (the console shows the full script)`
    );
  }
  const args = JSON.stringify(approval.arguments ?? {});
  const shown = args.length > 400 ? `${args.slice(0, 400)}…` : args;
  const kind = approval.options.includes('allow_session') ? 'write' : 'destructive';
  return `toolgate: allow the ${kind} call ${approval.tools.join(', ')} with ${shown}?`;
}

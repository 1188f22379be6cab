import type { CallToolResult } from '@modelcontextprotocol/server';
import { randomBytes } from 'node:crypto';
import { GatewayError } from '../errors/gateway-error.js';
import type { EventBus } from '../events/event-bus.js';
import type { Logger } from '../log/logger.js';
import { interruptedError } from '../store/sqlite-background.js';
import type { Store } from '../store/store.js';
import { createInitialDelivery, type BackgroundCall, type BackgroundStatus } from '../store/store-records.js';
import type { BackgroundRunner, BackgroundStart } from '../pipeline/ports.js';
import type { WebhookSender } from './webhook-sender.js';

interface Running {
  controller: AbortController;
  sessionId: string;
}

function textOf(result: CallToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n');
}

/**
 * Background calls (PRODUCT.md §6): work still running after the threshold answers the client at once and
 * goes on, detached from the client's request; its result is delivered later to the initiating session.
 */
export class BackgroundCalls implements BackgroundRunner {
  private readonly running = new Map<string, Running>();
  private closing = false;
  /** Results claimed for a session's next tool result, so two concurrent replies never both carry one. */
  private readonly claimed = new Set<string>();

  constructor(
    private readonly deps: {
      store: Store;
      events: EventBus;
      logger: Logger;
      webhooks: WebhookSender;
      autoAfterMs: number;
    },
  ) {}

  /** Runs `work`; past the threshold the client gets "moved to background as bg_…" and the work goes on. */
  async run(start: BackgroundStart, work: (signal: AbortSignal) => Promise<CallToolResult>): Promise<CallToolResult> {
    const controller = new AbortController();
    const forwardAbort = (): void => controller.abort();
    start.clientSignal?.addEventListener('abort', forwardAbort, { once: true });
    const promise = work(controller.signal);
    let timer: NodeJS.Timeout | undefined;
    const moved = await Promise.race([
      promise.then(() => false),
      new Promise<true>(
        (resolve) => (timer = setTimeout(() => resolve(true), start.immediately ? 0 : this.deps.autoAfterMs)),
      ),
    ]).finally(() => clearTimeout(timer));
    if (!moved) {
      start.clientSignal?.removeEventListener('abort', forwardAbort);
      return promise;
    }
    // From here the client's timeout or disconnect no longer reaches the work.
    start.clientSignal?.removeEventListener('abort', forwardAbort);
    const id = `bg_${randomBytes(8).toString('base64url')}`;
    const profileWebhook = this.deps.webhooks.configured(start.profile);
    await this.deps.store.upsertSession({ id: start.sessionId, profile: start.profile, at: Date.now() });
    await this.deps.store.insertBackground({
      id,
      sessionId: start.sessionId,
      profile: start.profile,
      kind: start.kind,
      tool: start.tool,
      scriptId: start.scriptId ?? null,
      callId: start.callId,
      startedAt: Date.now(),
      delivery: createInitialDelivery({ webhook: profileWebhook }),
    });
    if (start.callId !== null)
      await this.deps.store.updateCall(start.callId, { status: 'background', backgroundId: id });
    this.running.set(id, { controller, sessionId: start.sessionId });
    this.deps.events.publish({
      type: 'background.started',
      backgroundId: id,
      sessionId: start.sessionId,
      tool: start.tool,
    });
    void promise
      .then(
        (result) =>
          this.finish(
            id,
            controller.signal.aborted ? 'cancelled' : result.isError === true ? 'error' : 'ok',
            textOf(result),
          ),
        (error: unknown) => this.finish(id, 'error', error instanceof Error ? error.message : String(error)),
      )
      .catch((error: unknown) =>
        this.deps.logger.error(`background call ${id} could not be recorded`, { error: String(error) }),
      );
    const text = `moved to background as ${id}; the result will be delivered as a new message`;
    return {
      content: [{ type: 'text', text: `${start.tool} is still running: ${text} (or ask background_calls for it).` }],
      structuredContent: { background: true, id, tool: start.tool, message: text },
    };
  }

  /** Ends a running background call with MCP cancellation or by ending the script's process tree. */
  async cancel(id: string, sessionId?: string): Promise<BackgroundCall> {
    const call = await this.deps.store.getBackground(id);
    if (call === undefined || (sessionId !== undefined && call.sessionId !== sessionId)) {
      throw new GatewayError('not_found', `no background call ${id}`);
    }
    const running = this.running.get(id);
    if (call.status !== 'running' || running === undefined) {
      throw new GatewayError('conflict', `background call ${id} is not running (${call.status})`);
    }
    running.controller.abort();
    for (let waited = 0; waited < 50 && this.running.has(id); waited++)
      await new Promise((resolve) => setTimeout(resolve, 50));
    return (await this.deps.store.getBackground(id)) ?? call;
  }

  list(sessionId: string): Promise<BackgroundCall[]> {
    return this.deps.store.listBackground({ sessionId });
  }

  /** The tool channel: a session reads only its own calls; reading marks the tool delivery done. */
  async read(id: string, sessionId: string): Promise<BackgroundCall> {
    const call = await this.deps.store.getBackground(id);
    if (call === undefined || call.sessionId !== sessionId)
      throw new GatewayError('not_found', `no background call ${id}`);
    if (call.status !== 'running' && call.delivery.tool === 'pending') {
      await this.deps.store.updateDelivery(id, { tool: 'delivered' });
    }
    return call;
  }

  /** Channel (a): finished results not yet seen by this session, each taken once, to append to a tool result. */
  async takeForNextResult(sessionId: string): Promise<string[]> {
    const finished = (await this.deps.store.listBackground({ sessionId })).filter(
      (call) => call.status !== 'running' && call.delivery.nextResult === 'pending' && !this.claimed.has(call.id),
    );
    // Claimed before the first await, so a concurrent reply in the same session never takes the same result.
    for (const call of finished) this.claimed.add(call.id);
    const notes: string[] = [];
    for (const call of finished) {
      await this.deps.store.updateDelivery(call.id, { nextResult: 'delivered' });
      if (call.delivery.tool === 'delivered') continue;
      notes.push(describeFinished(call));
    }
    return notes;
  }

  /**
   * After a restart: whatever was running is failed and delivered like a result, its audit record completed,
   * and webhook deliveries that were still being retried when the gateway stopped are taken up again.
   */
  async recoverAfterRestart(): Promise<number> {
    const now = Date.now();
    const interrupted = await this.deps.store.markRunningInterrupted(now);
    for (const call of interrupted) {
      if (call.callId !== null) await this.interruptRecord(call.callId, now);
      await this.deliver(call);
    }
    const orphans = await this.deps.store.queryCalls({ status: 'running', limit: 500 });
    for (const row of orphans.rows) await this.interruptRecord(row.id, now);
    const interruptedIds = new Set(interrupted.map((call) => call.id));
    const unsent = (await this.deps.store.listBackground({ limit: 1000 })).filter(
      (call) => call.status !== 'running' && call.delivery.webhook.state === 'pending' && !interruptedIds.has(call.id),
    );
    for (const call of unsent) this.deps.webhooks.send(call);
    return interrupted.length;
  }

  private async interruptRecord(callId: number, now: number): Promise<void> {
    const record = await this.deps.store.getCall(callId);
    await this.deps.store.updateCall(callId, {
      status: 'interrupted',
      error: interruptedError,
      resultSummary: `error: ${interruptedError}`,
      ...(record === undefined ? {} : { durationMs: now - record.startedAt }),
    });
  }

  /**
   * Shutdown: running work is ended without recording an outcome, so the next start marks it interrupted and
   * delivers that, as after a crash.
   */
  close(): void {
    this.closing = true;
    for (const running of this.running.values()) running.controller.abort();
    this.running.clear();
    this.deps.webhooks.close();
  }

  private async finish(id: string, status: Exclude<BackgroundStatus, 'running'>, text: string): Promise<void> {
    if (this.closing) return;
    this.running.delete(id);
    const changed = await this.deps.store.finishBackground(id, {
      status,
      finishedAt: Date.now(),
      result: { text },
      ...(status === 'ok' ? {} : { error: text.slice(0, 2000) }),
    });
    const call = await this.deps.store.getBackground(id);
    if (changed && call !== undefined) await this.deliver(call);
  }

  /** Channels (b) event and (c) webhook; (a) and (d) are pulled by the session. */
  private async deliver(call: BackgroundCall): Promise<void> {
    this.deps.events.publish({
      type: 'background.finished',
      backgroundId: call.id,
      sessionId: call.sessionId,
      status: call.status,
    });
    await this.deps.store.updateDelivery(call.id, { event: 'delivered' });
    this.deps.webhooks.send(call);
  }
}

export function describeFinished(call: BackgroundCall): string {
  const result = (call.result as { text?: string } | undefined)?.text ?? call.error ?? '';
  return `[toolgate: background call ${call.id} (${call.tool}) ended: ${call.status}]\n${result}`;
}

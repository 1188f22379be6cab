import { createHmac } from 'node:crypto';
import type { Profile } from '../config/config-schema.js';
import type { Logger } from '../log/logger.js';
import type { Store } from '../store/store.js';
import type { BackgroundCall } from '../store/store-records.js';

export interface WebhookSenderDeps {
  profiles: Readonly<Record<string, Profile>>;
  store: Store;
  logger: Logger;
  fetch?: typeof fetch;
  /** Delays between attempts; the last failure marks the delivery failed. */
  retryDelaysMs?: readonly number[];
}

/** The JSON a profile's webhook receives when one of its background calls ends. */
export function webhookBody(call: BackgroundCall): string {
  return JSON.stringify({
    session: call.sessionId,
    callId: call.id,
    tool: call.tool,
    kind: call.kind,
    status: call.status,
    startedAt: new Date(call.startedAt).toISOString(),
    finishedAt: call.finishedAt === null ? null : new Date(call.finishedAt).toISOString(),
    ...(call.status === 'ok' ? { result: call.result } : { error: call.error }),
  });
}

export function signWebhook(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Posts results to profile webhooks with retries; each delivery runs on its own, so a dead hook blocks nothing. */
export class WebhookSender {
  private readonly fetch: typeof fetch;
  private readonly delays: readonly number[];

  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly deps: WebhookSenderDeps) {
    this.fetch = deps.fetch ?? fetch;
    this.delays = deps.retryDelaysMs ?? [1_000, 2_000, 5_000, 15_000, 60_000];
  }

  configured(profile: string): boolean {
    return this.deps.profiles[profile]?.webhook !== undefined;
  }

  send(call: BackgroundCall): void {
    const webhook = this.deps.profiles[call.profile]?.webhook;
    if (webhook === undefined || call.delivery.webhook.state === 'delivered') return;
    // A delivery taken up again after a restart goes on counting (and backing off) from where it stopped.
    this.schedule(call, webhook, call.delivery.webhook.attempts, 0);
  }

  /** An attempt that cannot even record its outcome (e.g. the store closed at shutdown) is logged, never thrown. */
  private schedule(
    call: BackgroundCall,
    webhook: { url: string; secret: string },
    attempt: number,
    delay: number,
  ): void {
    const run = (): void =>
      void this.attempt(call, webhook, attempt).catch((error: unknown) =>
        this.deps.logger.error(`webhook for ${call.id} could not be recorded`, { error: String(error) }),
      );
    if (delay === 0) run();
    else this.timers.add(setTimeout(run, delay).unref());
  }

  /** Stops pending retries; deliveries still pending are sent again at the next start. */
  close(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private async attempt(
    call: BackgroundCall,
    webhook: { url: string; secret: string },
    attempt: number,
  ): Promise<void> {
    const body = webhookBody(call);
    let error: string | undefined;
    try {
      const response = await this.fetch(webhook.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'X-Toolgate-Delivery': call.id,
          'X-Toolgate-Signature': signWebhook(webhook.secret, body),
        },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok) error = `HTTP ${response.status}`;
    } catch (caught) {
      error = caught instanceof Error ? caught.message : String(caught);
    }
    const delay = this.delays[attempt];
    const state = error === undefined ? 'delivered' : delay === undefined ? 'failed' : 'pending';
    await this.deps.store.updateDelivery(call.id, {
      webhook: { state, attempts: attempt + 1, ...(error === undefined ? {} : { lastError: error.slice(0, 200) }) },
    });
    if (state === 'pending' && delay !== undefined) {
      this.deps.logger.warn(`webhook for ${call.id} failed (${error ?? ''}); retrying in ${delay / 1000} s`);
      this.schedule(call, webhook, attempt + 1, delay);
    } else if (state === 'failed') {
      this.deps.logger.error(`webhook for ${call.id} failed ${attempt + 1} times; giving up`);
    }
  }
}

/** Everything the console and webhooks may watch; events are `noun.verb`. */
export type GatewayEvent =
  | { type: 'session.seen'; sessionId: string; profile: string; client?: string }
  | { type: 'call.started'; callId: number; sessionId: string; profile: string; tool: string; arguments: unknown }
  | {
      type: 'call.finished';
      callId: number;
      sessionId: string;
      profile: string;
      tool: string;
      status: string;
      durationMs: number;
      summary: string;
    }
  | { type: 'service.state'; service: string; state: 'starting' | 'up' | 'down'; error?: string }
  | { type: 'tools.changed'; services: string[] }
  | {
      type: 'script.progress';
      sessionId: string;
      scriptId: string;
      calls: number;
      failures: number;
      done?: number;
      total?: number;
      message?: string;
      elapsedMs: number;
      status: string;
    }
  | { type: 'approval.requested'; approvalId: string; sessionId: string }
  | { type: 'approval.decided'; approvalId: string; sessionId: string; decision: string; channel: string }
  | { type: 'background.started'; backgroundId: string; sessionId: string; tool: string }
  | { type: 'background.finished'; backgroundId: string; sessionId: string; status: string };

export interface EventBus {
  publish(event: GatewayEvent): void;
  subscribe(listener: (event: GatewayEvent) => void): () => void;
}

/** A listener that throws is isolated: one broken subscriber never stops delivery to the others. */
export function createEventBus(onListenerError: (error: unknown) => void = () => undefined): EventBus {
  const listeners = new Set<(event: GatewayEvent) => void>();
  return {
    publish(event) {
      for (const listener of [...listeners]) {
        try {
          listener(event);
        } catch (error) {
          onListenerError(error);
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

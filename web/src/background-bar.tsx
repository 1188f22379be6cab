import { useState } from 'react';
import type { BackgroundRow } from './api.js';
import { useRefreshOn } from './events.js';
import { formatDuration, useNow } from './format.js';
import { useAuth, useLoader } from './use-loader.js';

/** The session's running background calls, each with its elapsed time and a Cancel button. */
export function BackgroundBar({ sessionId }: { sessionId: string }) {
  const { api } = useAuth();
  const running = useLoader((client) => client.background(sessionId, 'running'), sessionId);
  const [cancelling, setCancelling] = useState<Set<string>>(new Set());
  const [problem, setProblem] = useState<string | undefined>();
  const now = useNow();
  useRefreshOn(
    ['background.started', 'background.finished'],
    running.reload,
    (event) => 'sessionId' in event && event.sessionId === sessionId,
    100,
  );

  const cancel = async (call: BackgroundRow) => {
    setCancelling((previous) => new Set(previous).add(call.id));
    setProblem(undefined);
    try {
      await api.cancelBackground(call.id);
    } catch (error) {
      setProblem(error instanceof Error ? error.message : String(error));
    } finally {
      setCancelling((previous) => {
        const next = new Set(previous);
        next.delete(call.id);
        return next;
      });
      running.reload();
    }
  };

  const calls = (running.data ?? []).filter((call) => call.status === 'running');
  if (calls.length === 0 && problem === undefined) return null;
  return (
    <section className="background-bar" aria-label="Background calls">
      <h2 className="background-title">Background calls</h2>
      <ul>
        {calls.map((call) => (
          <li key={call.id} className="background-call" data-background-id={call.id}>
            <span className="badge badge-live">running</span>
            <code className="tool-name">{call.kind === 'script' ? 'run_script' : call.tool}</code>
            <span className="muted">{formatDuration(now - call.startedAt)}</span>
            <button
              type="button"
              className="button danger small"
              disabled={cancelling.has(call.id)}
              onClick={() => void cancel(call)}
              aria-label={`Cancel ${call.tool} (${call.id})`}
            >
              {cancelling.has(call.id) ? 'Cancelling…' : 'Cancel'}
            </button>
          </li>
        ))}
      </ul>
      {problem !== undefined && (
        <p className="error" role="alert">
          {problem}
        </p>
      )}
    </section>
  );
}

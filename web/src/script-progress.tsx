import { useEffect, useRef, useState } from 'react';
import type { GatewayEvent } from './api.js';
import { useGatewayEvents } from './events.js';
import { formatDuration, useNow } from './format.js';

type ProgressEvent = Extract<GatewayEvent, { type: 'script.progress' }>;

interface Shown {
  progress: ProgressEvent;
  receivedAt: number;
}

/** How long a finished script's block stays, so the end can be read (the seed: "a few seconds"). */
export const progressLingerMs = 5000;

/** The live block at the bottom of a session's timeline: one line per running script, gone soon after its end. */
export function ScriptProgress({ sessionId, onEnd }: { sessionId: string; onEnd: () => void }) {
  const [shown, setShown] = useState<Map<string, Shown>>(new Map());
  const timers = useRef(new Map<string, number>());
  const now = useNow(250);

  useEffect(() => {
    const pending = timers.current;
    return () => {
      for (const timer of pending.values()) window.clearTimeout(timer);
      pending.clear();
    };
  }, []);

  useGatewayEvents(['script.progress'], (event) => {
    if (event.type !== 'script.progress' || event.sessionId !== sessionId) return;
    setShown((previous) => new Map(previous).set(event.scriptId, { progress: event, receivedAt: Date.now() }));
    if (event.status === 'running' || timers.current.has(event.scriptId)) return;
    onEnd();
    timers.current.set(
      event.scriptId,
      window.setTimeout(() => {
        timers.current.delete(event.scriptId);
        setShown((previous) => {
          const next = new Map(previous);
          next.delete(event.scriptId);
          return next;
        });
      }, progressLingerMs),
    );
  });

  if (shown.size === 0) return null;
  return (
    <section className="script-progress" aria-label="Script progress" aria-live="polite">
      {[...shown.entries()].map(([scriptId, { progress, receivedAt }]) => {
        const running = progress.status === 'running';
        const elapsed = progress.elapsedMs + (running ? now - receivedAt : 0);
        const known = progress.total !== undefined && progress.total > 0;
        const done = Math.min(progress.done ?? 0, progress.total ?? 0);
        const percent = known ? Math.round((done / (progress.total ?? 1)) * 100) : 0;
        return (
          <div
            key={scriptId}
            className={`progress-line ${running ? 'running' : `ended status-${progress.status.replace(' ', '-')}`}`}
            data-script-id={scriptId}
          >
            <div className="progress-text">
              <strong>{running ? 'Script running' : `Script ${progress.status}`}</strong>
              <span>
                {progress.calls.toLocaleString()} calls
                {progress.failures > 0 ? ` · ${progress.failures.toLocaleString()} failed` : ''}
              </span>
              <span>{formatDuration(elapsed)}</span>
              {known && (
                <span>
                  {done.toLocaleString()} / {(progress.total ?? 0).toLocaleString()}
                </span>
              )}
              {progress.message !== undefined && <span className="progress-message">{progress.message}</span>}
            </div>
            {known && (
              <div
                className="progress-bar"
                role="progressbar"
                aria-label="Script progress"
                aria-valuemin={0}
                aria-valuemax={progress.total}
                aria-valuenow={done}
              >
                <div className="progress-fill" style={{ width: `${percent}%` }} />
              </div>
            )}
          </div>
        );
      })}
    </section>
  );
}

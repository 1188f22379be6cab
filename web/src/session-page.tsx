import { useState, type ReactNode } from 'react';
import type { Approval, BackgroundRow, CallRecord, GatewayEvent } from './api.js';
import { ApprovalCard } from './approval-card.js';
import { BackgroundBar } from './background-bar.js';
import { BackgroundItem, CallItem, ScriptItem } from './call-items.js';
import { useRefreshOn } from './events.js';
import { FileViewer, type OpenFile } from './file-viewer.js';
import { formatTime } from './format.js';
import { Link } from './router.js';
import { ScriptProgress } from './script-progress.js';
import { useAuth, useLoader } from './use-loader.js';

const timelineLimit = 200;

interface TimelineData {
  calls: CallRecord[];
  more: boolean;
  approvals: Approval[];
  background: BackgroundRow[];
}

async function loadTimeline(api: ReturnType<typeof useAuth>['api'], sessionId: string): Promise<TimelineData> {
  const [page, approvals, background] = await Promise.all([
    api.audit({ session: sessionId, limit: timelineLimit }),
    api.approvals('all', sessionId),
    api.background(sessionId),
  ]);
  return { calls: page.rows, more: page.nextCursor !== undefined, approvals, background };
}

interface Entry {
  at: number;
  key: string;
  node: ReactNode;
}

/** One session: its calls, scripts, approvals and background results in time order, live. */
export function SessionPage({ sessionId }: { sessionId: string }) {
  const { api } = useAuth();
  const timeline = useLoader((client) => loadTimeline(client, sessionId), sessionId);
  const session = useLoader((client) => client.sessions(), 'sessions').data?.find((row) => row.id === sessionId);
  const [decided, setDecided] = useState<Record<string, Approval>>({});
  const [file, setFile] = useState<OpenFile | undefined>();
  const inSession = (event: GatewayEvent) => 'sessionId' in event && event.sessionId === sessionId;
  useRefreshOn(
    [
      'call.started',
      'call.finished',
      'approval.requested',
      'approval.decided',
      'background.started',
      'background.finished',
    ],
    timeline.reload,
    inSession,
  );

  const entries: Entry[] = [];
  for (const call of timeline.data?.calls ?? []) {
    entries.push({
      at: call.startedAt,
      key: `call-${call.id}`,
      node: call.kind === 'script' ? <ScriptItem call={call} onOpen={setFile} /> : <CallItem call={call} />,
    });
  }
  for (const fetched of timeline.data?.approvals ?? []) {
    const approval = decided[fetched.id] ?? fetched;
    entries.push({
      at: approval.createdAt,
      key: `approval-${approval.id}`,
      node: (
        <ApprovalCard
          api={api}
          approval={approval}
          onChange={(next) => setDecided((previous) => ({ ...previous, [next.id]: next }))}
        />
      ),
    });
  }
  for (const call of timeline.data?.background ?? []) {
    if (call.status === 'running' || call.finishedAt === null) continue;
    entries.push({ at: call.finishedAt, key: `background-${call.id}`, node: <BackgroundItem call={call} /> });
  }
  entries.sort((a, b) => a.at - b.at || a.key.localeCompare(b.key));

  return (
    <section aria-labelledby="session-title" className="session-page">
      <p className="breadcrumb">
        <Link to="/">Sessions</Link> /
      </p>
      <h1 id="session-title" className="session-title">
        {sessionId}
      </h1>
      {session !== undefined && (
        <p className="muted session-meta">
          profile <strong>{session.profile}</strong> · client {session.client ?? 'unknown'} · started{' '}
          {formatTime(session.startedAt)}
        </p>
      )}
      <BackgroundBar sessionId={sessionId} />
      {timeline.error !== undefined && (
        <p className="error" role="alert">
          {timeline.error}
        </p>
      )}
      {timeline.data?.more === true && (
        <p className="muted">
          Showing the last {timelineLimit} calls; older ones are on the <Link to="/audit">audit page</Link>.
        </p>
      )}
      <ol className="timeline" aria-label="Timeline">
        {entries.map((entry) => (
          <li key={entry.key}>{entry.node}</li>
        ))}
      </ol>
      {timeline.data !== undefined && entries.length === 0 && <p className="empty">Nothing has happened yet.</p>}
      <ScriptProgress sessionId={sessionId} onEnd={timeline.reload} />
      {file !== undefined && <FileViewer file={file} onClose={() => setFile(undefined)} />}
    </section>
  );
}

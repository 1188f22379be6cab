import { useRefreshOn } from './events.js';
import { formatAgo, formatTime, useNow } from './format.js';
import { Link, sessionPath } from './router.js';
import { useLoader } from './use-loader.js';

/** Every session the gateway has seen, most recent activity first, refreshed as events arrive. */
export function SessionsPage() {
  const sessions = useLoader((api) => api.sessions(), 'sessions');
  const now = useNow(5000);
  useRefreshOn(
    [
      'session.seen',
      'call.started',
      'call.finished',
      'approval.requested',
      'approval.decided',
      'background.started',
      'background.finished',
    ],
    sessions.reload,
  );
  const rows = [...(sessions.data ?? [])].sort((a, b) => b.lastActivityAt - a.lastActivityAt);

  return (
    <section aria-labelledby="sessions-title">
      <h1 id="sessions-title">Sessions</h1>
      {sessions.error !== undefined && <p className="error">{sessions.error}</p>}
      {sessions.data !== undefined && rows.length === 0 && (
        <p className="empty">No sessions yet. Connect an MCP client to the gateway's /mcp endpoint.</p>
      )}
      {rows.length > 0 && (
        <table className="table responsive sessions">
          <thead>
            <tr>
              <th scope="col">Session</th>
              <th scope="col">Profile</th>
              <th scope="col">Client</th>
              <th scope="col">Started</th>
              <th scope="col">Last activity</th>
              <th scope="col">Running</th>
              <th scope="col">Pending approvals</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((session) => (
              <tr key={session.id}>
                <td data-label="Session">
                  <Link to={sessionPath(session.id)}>{session.id}</Link>
                </td>
                <td data-label="Profile">{session.profile}</td>
                <td data-label="Client">{session.client ?? '—'}</td>
                <td data-label="Started">{formatTime(session.startedAt)}</td>
                <td data-label="Last activity">{formatAgo(session.lastActivityAt, now)}</td>
                <td data-label="Running">
                  {session.running > 0 ? <span className="badge badge-live">{session.running} running</span> : '—'}
                </td>
                <td data-label="Pending approvals">
                  {session.pendingApprovals > 0 ? (
                    <span className="badge badge-warn">{session.pendingApprovals} pending</span>
                  ) : (
                    '—'
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

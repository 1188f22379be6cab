import { useState, type FormEvent } from 'react';
import { callStatuses, type CallRecord } from './api.js';
import { RecordLinks, ScriptFacts, StatusBadge } from './call-items.js';
import { FileViewer, type OpenFile } from './file-viewer.js';
import { formatDuration, formatJson, formatTime } from './format.js';
import { Link, sessionPath, useLocation } from './router.js';
import { useLoader } from './use-loader.js';

const pageSize = 50;
const filterKeys = ['since', 'until', 'profile', 'session', 'tool', 'status', 'kind'] as const;
type Filter = Record<(typeof filterKeys)[number], string>;

function filterFrom(search: string): Filter {
  const params = new URLSearchParams(search);
  return Object.fromEntries(filterKeys.map((key) => [key, params.get(key) ?? ''])) as Filter;
}

/** datetime-local values are local wall-clock times; the API wants epoch milliseconds. */
function toEpoch(local: string): number | undefined {
  if (local === '') return undefined;
  const at = new Date(local).getTime();
  return Number.isNaN(at) ? undefined : at;
}

function AuditRow({ call, onOpen }: { call: CallRecord; onOpen: (file: OpenFile) => void }) {
  const [open, setOpen] = useState(false);
  const detailsId = `audit-details-${call.id}`;
  return (
    <>
      <tr className={open ? 'expanded' : undefined} data-call-id={call.id}>
        <td data-label="">
          <button
            type="button"
            className="toggle"
            aria-expanded={open}
            aria-controls={detailsId}
            aria-label={`${open ? 'Hide' : 'Show'} details of call ${call.id}`}
            onClick={() => setOpen(!open)}
          >
            {open ? '▾' : '▸'}
          </button>
        </td>
        <td data-label="Time">{formatTime(call.startedAt)}</td>
        <td data-label="Session">
          <Link to={sessionPath(call.sessionId)}>{call.sessionId}</Link>
        </td>
        <td data-label="Profile">{call.profile}</td>
        <td data-label="Tool">
          <code className="tool-name">{call.tool}</code>
        </td>
        <td data-label="Status">
          <StatusBadge status={call.status} />
        </td>
        <td data-label="Duration">{formatDuration(call.durationMs)}</td>
        <td data-label="Summary" className="summary-cell">
          {call.kind === 'script' ? (call.script?.description ?? call.resultSummary ?? '') : (call.resultSummary ?? '')}
        </td>
      </tr>
      {open && (
        <tr className="details-row" id={detailsId}>
          <td colSpan={8}>
            {call.kind === 'script' ? (
              <div className="details">
                <p className="description">{call.script?.description ?? 'No description.'}</p>
                {call.resultSummary !== null && <p className="summary">{call.resultSummary}</p>}
                {call.error !== null && <p className="error-text">{call.error}</p>}
                <ScriptFacts call={call} withContent />
                <RecordLinks call={call} onOpen={onOpen} />
              </div>
            ) : (
              <div className="details">
                {call.error !== null && <p className="error-text">{call.error}</p>}
                <p className="label">Arguments</p>
                <pre className="json" tabIndex={0}>
                  {formatJson(call.arguments)}
                </pre>
              </div>
            )}
          </td>
        </tr>
      )}
    </>
  );
}

/** The audit log with filters and keyset paging: each page asks for rows below the previous page's last id. */
export function AuditPage() {
  const { search } = useLocation();
  const [draft, setDraft] = useState<Filter>(() => filterFrom(search));
  const [filter, setFilter] = useState<Filter>(draft);
  // cursors[i] is the `before` of page i; page 0 has none.
  const [cursors, setCursors] = useState<Array<number | undefined>>([undefined]);
  const [file, setFile] = useState<OpenFile | undefined>();
  const before = cursors[cursors.length - 1];
  const query = {
    since: toEpoch(filter.since),
    until: toEpoch(filter.until),
    profile: filter.profile,
    session: filter.session.trim(),
    tool: filter.tool.trim(),
    status: filter.status,
    kind: filter.kind,
    limit: pageSize,
    before,
  };
  const page = useLoader((api) => api.audit(query), JSON.stringify(query));
  const profiles = useLoader((api) => api.tools().then((tools) => tools.profiles.map((p) => p.name)), 'profiles');

  const apply = (event: FormEvent) => {
    event.preventDefault();
    setFilter(draft);
    setCursors([undefined]);
    const params = new URLSearchParams(Object.entries(draft).filter(([, value]) => value !== ''));
    window.history.replaceState(null, '', `/audit${params.size > 0 ? `?${params.toString()}` : ''}`);
  };
  const clear = () => {
    const empty = filterFrom('');
    setDraft(empty);
    setFilter(empty);
    setCursors([undefined]);
    window.history.replaceState(null, '', '/audit');
  };
  const field = (key: keyof Filter) => ({
    value: draft[key],
    onChange: (event: { target: { value: string } }) => setDraft({ ...draft, [key]: event.target.value }),
  });

  const rows = page.data?.rows ?? [];
  const nextCursor = page.data?.nextCursor;
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit</h1>
      <form className="filters" onSubmit={apply} aria-label="Audit filters">
        <label>
          From
          <input type="datetime-local" step="1" {...field('since')} />
        </label>
        <label>
          Until
          <input type="datetime-local" step="1" {...field('until')} />
        </label>
        <label>
          Profile
          <select {...field('profile')}>
            <option value="">any</option>
            {(profiles.data ?? []).map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Session
          <input type="text" placeholder="profile/session" {...field('session')} />
        </label>
        <label>
          Tool
          <input type="text" placeholder="service__tool or run_script" {...field('tool')} />
        </label>
        <label>
          Status
          <select {...field('status')}>
            <option value="">any</option>
            {callStatuses.map((status) => (
              <option key={status} value={status}>
                {status}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind
          <select {...field('kind')}>
            <option value="">any</option>
            <option value="call">call</option>
            <option value="script">script</option>
          </select>
        </label>
        <div className="filter-actions">
          <button type="submit" className="button primary">
            Apply filters
          </button>
          <button type="button" className="button" onClick={clear}>
            Clear
          </button>
          <button type="button" className="button" onClick={page.reload}>
            Refresh
          </button>
        </div>
      </form>
      {page.error !== undefined && (
        <p className="error" role="alert">
          {page.error}
        </p>
      )}
      {page.data !== undefined && rows.length === 0 && <p className="empty">No records match.</p>}
      {rows.length > 0 && (
        <table className="table responsive audit">
          <thead>
            <tr>
              <th scope="col">
                <span className="visually-hidden">Details</span>
              </th>
              <th scope="col">Time</th>
              <th scope="col">Session</th>
              <th scope="col">Profile</th>
              <th scope="col">Tool</th>
              <th scope="col">Status</th>
              <th scope="col">Duration</th>
              <th scope="col">Summary</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((call) => (
              <AuditRow key={call.id} call={call} onOpen={setFile} />
            ))}
          </tbody>
        </table>
      )}
      <nav className="pager" aria-label="Audit pages">
        <button
          type="button"
          className="button"
          disabled={cursors.length <= 1}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          ← Previous
        </button>
        <span className="muted">Page {cursors.length}</span>
        <button
          type="button"
          className="button"
          disabled={nextCursor === undefined}
          onClick={() => setCursors([...cursors, nextCursor])}
        >
          Next →
        </button>
      </nav>
      {file !== undefined && <FileViewer file={file} onClose={() => setFile(undefined)} />}
    </section>
  );
}

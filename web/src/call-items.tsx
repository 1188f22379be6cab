import type { BackgroundRow, CallRecord } from './api.js';
import type { OpenFile } from './file-viewer.js';
import { decisionLabel, formatDuration, formatJson, formatTime } from './format.js';
import { PythonCode } from './python-code.js';

const recordFiles = ['script.py', 'calls.jsonl', 'output.txt'];

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge status status-${status.replace(' ', '-')}`}>{status}</span>;
}

/** Buttons that open a script's record files (under its details directory) in the viewer. */
export function RecordLinks({ call, onOpen }: { call: CallRecord; onOpen: (file: OpenFile) => void }) {
  const dir = call.script?.detailsDir ?? '';
  if (dir === '') return null;
  return (
    <p className="record-links">
      <span className="muted">Details:</span>
      {recordFiles.map((name) => (
        <button
          type="button"
          key={name}
          className="link-button"
          onClick={() => onOpen({ session: call.sessionId, path: `${dir.replace(/\/?$/, '/')}${name}` })}
        >
          {name}
        </button>
      ))}
    </p>
  );
}

/** What a script record adds: calls per tool, exit code, and (when asked) the script itself. */
export function ScriptFacts({ call, withContent }: { call: CallRecord; withContent: boolean }) {
  const script = call.script;
  if (script === null) return null;
  const perTool = Object.entries(script.callsPerTool);
  return (
    <>
      <dl className="facts">
        <div>
          <dt>Calls</dt>
          <dd>{script.calls.toLocaleString()}</dd>
        </div>
        <div>
          <dt>Failures</dt>
          <dd className={script.failures > 0 ? 'warn-text' : undefined}>{script.failures.toLocaleString()}</dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd>{formatDuration(call.durationMs)}</dd>
        </div>
        <div>
          <dt>Exit code</dt>
          <dd>{script.exitCode ?? '—'}</dd>
        </div>
      </dl>
      {perTool.length > 0 && (
        <table className="table compact per-tool">
          <caption>Calls per tool</caption>
          <tbody>
            {perTool.map(([tool, count]) => (
              <tr key={tool}>
                <td>
                  <code>{tool}</code>
                </td>
                <td className="number">{count.toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {withContent && <PythonCode source={script.content} label={`Script of call ${call.id}`} />}
    </>
  );
}

function ApprovalNote({ call }: { call: CallRecord }) {
  if (call.approval === null) return null;
  return (
    <p className="muted">
      {decisionLabel(call.approval.decision)} by {call.approval.decidedBy} via {call.approval.channel} after{' '}
      {formatDuration(call.approval.waitedMs)}
    </p>
  );
}

/** A direct tool call in the timeline. */
export function CallItem({ call }: { call: CallRecord }) {
  return (
    <article className="item call-item" data-call-id={call.id}>
      <header className="item-header">
        <time className="item-time">{formatTime(call.startedAt)}</time>
        <code className="tool-name">{call.tool}</code>
        <StatusBadge status={call.status} />
        <span className="muted">{formatDuration(call.durationMs)}</span>
      </header>
      {call.error !== null ? (
        <p className="error-text">{call.error}</p>
      ) : (
        call.resultSummary !== null && <p className="summary">{call.resultSummary}</p>
      )}
      <ApprovalNote call={call} />
      <details>
        <summary>Arguments</summary>
        <pre className="json" tabIndex={0}>
          {formatJson(call.arguments)}
        </pre>
      </details>
    </article>
  );
}

/** A run_script run in the timeline: description, status, counts and its record files. */
export function ScriptItem({ call, onOpen }: { call: CallRecord; onOpen: (file: OpenFile) => void }) {
  const description =
    call.script?.description ??
    (typeof call.arguments['description'] === 'string' ? call.arguments['description'] : '');
  return (
    <article className="item script-item" data-call-id={call.id}>
      <header className="item-header">
        <time className="item-time">{formatTime(call.startedAt)}</time>
        <strong>Script</strong>
        <StatusBadge status={call.status} />
        {call.script !== null && (
          <span className="muted">
            {call.script.calls.toLocaleString()} calls · {call.script.failures.toLocaleString()} failed
          </span>
        )}
      </header>
      {description !== '' && <p className="description">{description}</p>}
      {call.resultSummary !== null && <p className="summary">{call.resultSummary}</p>}
      <ApprovalNote call={call} />
      <RecordLinks call={call} onOpen={onOpen} />
      {call.script !== null && (
        <details>
          <summary>Calls per tool and the script</summary>
          <ScriptFacts call={call} withContent />
        </details>
      )}
    </article>
  );
}

/** A background call that finished: its result arrives here as well as in the agent's next reply. */
export function BackgroundItem({ call }: { call: BackgroundRow }) {
  return (
    <article className="item background-item" data-background-id={call.id}>
      <header className="item-header">
        <time className="item-time">{formatTime(call.finishedAt ?? call.startedAt)}</time>
        <span className="badge badge-quiet">background result</span>
        <code className="tool-name">{call.kind === 'script' ? 'run_script' : call.tool}</code>
        <StatusBadge status={call.status} />
        {call.finishedAt !== null && <span className="muted">{formatDuration(call.finishedAt - call.startedAt)}</span>}
      </header>
      {call.error !== null && <p className="error-text">{call.error}</p>}
      {call.result !== null && call.result !== undefined && (
        <details>
          <summary>Result</summary>
          <pre className="json" tabIndex={0}>
            {typeof call.result === 'string' ? call.result : formatJson(call.result)}
          </pre>
        </details>
      )}
    </article>
  );
}

import { useState } from 'react';
import { ApiError, type ApiClient, type Approval, type ApprovalOption } from './api.js';
import { decisionLabel, formatJson, formatTime, optionLabels, useNow } from './format.js';
import { PythonCode } from './python-code.js';
import { Link, sessionPath } from './router.js';

/** The buttons a card offers: scripts are allowed once or denied, never for the whole session. */
export function cardOptions(approval: Approval): ApprovalOption[] {
  const order: ApprovalOption[] = ['allow_once', 'allow_session', 'deny'];
  return order.filter(
    (option) => approval.options.includes(option) && !(approval.kind === 'script' && option === 'allow_session'),
  );
}

function Countdown({ until }: { until: number }) {
  const now = useNow();
  const seconds = Math.max(0, Math.round((until - now) / 1000));
  return (
    <span className="muted">
      expires in {Math.floor(seconds / 60)}:{String(seconds % 60).padStart(2, '0')}
    </span>
  );
}

interface ApprovalCardProps {
  api: ApiClient;
  approval: Approval;
  onChange: (approval: Approval) => void;
  showSession?: boolean;
}

/** An approval as a card: what is asked, and the decision buttons while it is pending. */
export function ApprovalCard({ api, approval, onChange, showSession = false }: ApprovalCardProps) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | undefined>();
  const pending = approval.decision === null;
  const destructive = approval.kind === 'call' && !approval.options.includes('allow_session');

  const decide = async (option: ApprovalOption) => {
    setBusy(true);
    setProblem(undefined);
    try {
      onChange(await api.decide(approval.id, option));
    } catch (error) {
      // Someone decided first (CLI, elicitation, expiry): show what was decided instead.
      if (error instanceof ApiError && error.status === 409) {
        await api.approval(approval.id).then(onChange, () => setProblem(error.message));
      } else setProblem(error instanceof Error ? error.message : String(error));
    } finally {
      setBusy(false);
    }
  };

  const title = approval.kind === 'script' ? 'Script' : approval.tools.join(', ');
  return (
    <article
      className={`card approval ${pending ? 'pending' : `decided approval-${approval.decision ?? ''}`}`}
      aria-label={`Approval ${approval.id}`}
      data-approval-id={approval.id}
    >
      <header className="card-header">
        <span className={`badge ${pending ? 'badge-warn' : 'badge-quiet'}`}>
          {pending ? 'Approval needed' : 'Approval'}
        </span>
        <strong className="card-title">{title}</strong>
        {destructive && <span className="badge badge-danger">destructive</span>}
        <span className="card-meta">
          {showSession && (
            <>
              <Link to={sessionPath(approval.sessionId)}>{approval.sessionId}</Link> ·{' '}
            </>
          )}
          {formatTime(approval.createdAt)}
        </span>
      </header>
      {approval.description !== null && approval.description !== '' && (
        <p className="description">{approval.description}</p>
      )}
      {approval.kind === 'script' ? (
        <>
          <p>
            Write tools the script may call:{' '}
            {approval.tools.length === 0 ? (
              <em>none</em>
            ) : (
              approval.tools.map((tool) => (
                <code key={tool} className="tool-name">
                  {tool}
                </code>
              ))
            )}
          </p>
          <PythonCode source={approval.script ?? ''} label={`Script of approval ${approval.id}`} />
        </>
      ) : (
        <>
          <p className="label">Arguments</p>
          <pre className="json" tabIndex={0}>
            {formatJson(approval.arguments ?? {})}
          </pre>
        </>
      )}
      {pending ? (
        <footer className="card-actions">
          {cardOptions(approval).map((option) => (
            <button
              type="button"
              key={option}
              className={option === 'deny' ? 'button danger' : option === 'allow_once' ? 'button primary' : 'button'}
              disabled={busy}
              onClick={() => void decide(option)}
            >
              {optionLabels[option]}
            </button>
          ))}
          <Countdown until={approval.expiresAt} />
          {problem !== undefined && (
            <span className="error" role="alert">
              {problem}
            </span>
          )}
        </footer>
      ) : (
        <footer className="card-actions" role="status">
          <strong className={`decision decision-${approval.decision ?? ''}`}>
            {decisionLabel(approval.decision ?? '')}
          </strong>
          <span className="muted">
            {approval.decidedBy !== null && `by ${approval.decidedBy}`}
            {approval.channel !== null && ` via ${approval.channel}`}
            {approval.decidedAt !== null && ` at ${formatTime(approval.decidedAt)}`}
          </span>
        </footer>
      )}
    </article>
  );
}

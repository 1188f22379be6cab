import { useEffect, useState } from 'react';
import type { Approval } from './api.js';
import { ApprovalCard } from './approval-card.js';
import { useGatewayEvents } from './events.js';
import { useAuth, useLoader } from './use-loader.js';

/**
 * Every pending approval of every session. A card decided here or elsewhere (CLI, elicitation, expiry) stays
 * on the page showing the decision until the page is left, so the person sees what happened to it.
 */
export function ApprovalsPage() {
  const { api } = useAuth();
  const pending = useLoader((client) => client.approvals('pending'), 'approvals');
  const [cards, setCards] = useState<Map<string, Approval>>(new Map());

  useEffect(() => {
    if (pending.data === undefined) return;
    setCards((previous) => {
      const next = new Map(previous);
      for (const approval of pending.data ?? []) next.set(approval.id, approval);
      return next;
    });
  }, [pending.data]);

  const update = (approval: Approval) => setCards((previous) => new Map(previous).set(approval.id, approval));

  useGatewayEvents(['approval.requested', 'approval.decided'], (event) => {
    if (event.type !== 'approval.requested' && event.type !== 'approval.decided') return;
    if (event.type === 'approval.decided' && !cards.has(event.approvalId)) return;
    api.approval(event.approvalId).then(update, () => pending.reload());
  });

  const shown = [...cards.values()].sort((a, b) => b.createdAt - a.createdAt);
  const waiting = shown.filter((approval) => approval.decision === null).length;
  return (
    <section aria-labelledby="approvals-title">
      <h1 id="approvals-title">Approvals</h1>
      <p className="muted" role="status">
        {waiting === 0 ? 'Nothing is waiting for a decision.' : `${waiting} waiting for a decision.`}
      </p>
      {pending.error !== undefined && (
        <p className="error" role="alert">
          {pending.error}
        </p>
      )}
      <div className="card-list">
        {shown.map((approval) => (
          <ApprovalCard key={approval.id} api={api} approval={approval} onChange={update} showSession />
        ))}
      </div>
    </section>
  );
}

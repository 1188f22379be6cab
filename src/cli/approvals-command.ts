import { userInfo } from 'node:os';
import { join } from 'node:path';
import { ApprovalService, describeApproval } from '../approvals/approval-service.js';
import { createEventBus } from '../events/event-bus.js';
import { createLogger } from '../log/logger.js';
import { openSqliteStore } from '../store/store.js';
import type { Approval, ApprovalOption } from '../store/store-records.js';
import type { CliContext } from './cli-context.js';

export function formatApprovals(approvals: readonly Approval[]): string {
  if (approvals.length === 0) return 'no approvals';
  return approvals
    .map((approval) => {
      const state =
        approval.decision === null
          ? `pending, expires ${new Date(approval.expiresAt).toISOString()}`
          : `${approval.decision} by ${approval.decidedBy ?? '?'} via ${approval.channel ?? '?'}`;
      return [
        `${approval.id}  ${approval.kind}  session ${approval.sessionId}  [${state}]`,
        `  ${describeApproval(approval)}`,
        `  options: ${approval.options.join(' / ')}`,
        ...(approval.script === null ? [] : approval.script.split('\n').map((line) => `  | ${line}`)),
      ].join('\n');
    })
    .join('\n\n');
}

/** `toolgate approvals` lists; `approve`/`deny` decide through the store, which the waiting gateway polls. */
export async function runApprovalsCommand(
  context: CliContext,
  command: 'approvals' | 'approve' | 'deny',
  options: { id: string | undefined; session: boolean; all: boolean; json: boolean },
  out: (line: string) => void,
): Promise<number> {
  const store = openSqliteStore(join(context.dataDir, 'toolgate.db'));
  try {
    if (command === 'approvals') {
      const approvals = await store.listApprovals({ status: options.all ? 'all' : 'pending' });
      out(options.json ? JSON.stringify(approvals, null, 2) : formatApprovals(approvals));
      return 0;
    }
    if (options.id === undefined) throw new Error(`${command} needs an approval id (see toolgate approvals)`);
    const approvals = new ApprovalService({
      store,
      events: createEventBus(),
      logger: createLogger({ level: 'silent' }),
      timeoutSec: context.config.settings.approvals.timeoutSec,
    });
    const decision: ApprovalOption = command === 'deny' ? 'deny' : options.session ? 'allow_session' : 'allow_once';
    try {
      const decided = await approvals.decide(options.id, {
        decision,
        decidedBy: `cli (${userInfo().username})`,
        channel: 'cli',
      });
      out(`${decided.id}: ${decision}`);
    } finally {
      approvals.close();
    }
    return 0;
  } finally {
    await store.close();
  }
}

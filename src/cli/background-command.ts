import { join } from 'node:path';
import { loadOrCreateSecrets } from '../config/secrets.js';
import { openSqliteStore } from '../store/store.js';
import type { BackgroundCall } from '../store/store-records.js';
import type { CliContext } from './cli-context.js';

export function formatBackground(calls: readonly BackgroundCall[]): string {
  if (calls.length === 0) return 'no background calls';
  return calls
    .map((call) => {
      const seconds = Math.round(((call.finishedAt ?? Date.now()) - call.startedAt) / 1000);
      return `${call.id}  ${call.status.padEnd(11)} ${String(seconds).padStart(5)} s  ${call.tool}  session ${call.sessionId}${call.error === null ? '' : `  — ${call.error.slice(0, 100)}`}`;
    })
    .join('\n');
}

/** `toolgate background` reads the store; `toolgate cancel ID` asks the running gateway, which owns the work. */
export async function runBackgroundCommand(
  context: CliContext,
  command: 'background' | 'cancel',
  options: { id: string | undefined; session: string | undefined; json: boolean },
  out: (line: string) => void,
): Promise<number> {
  if (command === 'background') {
    const store = openSqliteStore(join(context.dataDir, 'toolgate.db'));
    try {
      const calls = await store.listBackground(options.session === undefined ? {} : { sessionId: options.session });
      out(options.json ? JSON.stringify(calls, null, 2) : formatBackground(calls));
      return 0;
    } finally {
      await store.close();
    }
  }
  if (options.id === undefined) throw new Error('cancel needs a background call id (see toolgate background)');
  const { adminToken } = loadOrCreateSecrets(context.dataDir, context.config);
  const host = context.config.listen.host.includes(':')
    ? `[${context.config.listen.host}]`
    : context.config.listen.host;
  const url = `http://${host}:${context.config.listen.port}/api/background/${encodeURIComponent(options.id)}/cancel`;
  let response: Response;
  try {
    response = await fetch(url, { method: 'POST', headers: { Authorization: `Bearer ${adminToken}` } });
  } catch {
    throw new Error(
      `no gateway answers at ${host}:${context.config.listen.port}; background calls run only while it does`,
    );
  }
  const body = (await response.json()) as { background?: BackgroundCall; error?: { message: string } };
  if (!response.ok || body.background === undefined) throw new Error(body.error?.message ?? `HTTP ${response.status}`);
  out(`${body.background.id}: ${body.background.status}`);
  return 0;
}

import type { Client } from '@modelcontextprotocol/client';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { workspaceDirName } from '../src/sessions/workspace.js';
import { textOf, tokens, type TestGateway } from './harness.js';
import type { ScriptReplySummary } from '../src/script/script-reply.js';

// Shared by the run_script gateway e2e files: calling run_script, finding a session's files, answering approvals.

/** The structured part of a run_script reply. */
export type ScriptSummary = ScriptReplySummary;

export interface ScriptResult {
  text: string;
  firstLine: string;
  isError: boolean;
  summary: ScriptSummary | undefined;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The first line of every run_script reply that ran (PRODUCT.md §4). */
export const summaryLine =
  /^run_script (ok|failed|timed out|cancelled) · (\d[\d,]*) calls \((\d[\d,]*) failed\) · (\d+\.\d) s · details: (\.agent\/scripts\/[A-Za-z0-9_-]+\/)$/;

export function toScriptResult(result: { content?: unknown; isError?: unknown; structuredContent?: unknown }) {
  const text = textOf(result);
  return {
    text,
    firstLine: text.split('\n')[0] ?? '',
    isError: result.isError === true,
    summary: result.structuredContent as ScriptSummary | undefined,
  } satisfies ScriptResult;
}

export async function runScript(
  client: Client,
  code: string,
  tools: string[] = [],
  options: Parameters<Client['callTool']>[1] = {},
  description = 'e2e script',
): Promise<ScriptResult> {
  const result = await client.callTool({ name: 'run_script', arguments: { code, tools, description } }, options);
  return toScriptResult(result);
}

/** The session's workspace directory on the gateway's disk. */
export function workspaceOf(gateway: TestGateway, sessionId: string): string {
  return join(gateway.dataDir, 'workspaces', workspaceDirName(sessionId));
}

/** The record directories under `.agent/scripts/` of a session (empty when none was ever created). */
export async function scriptDirs(gateway: TestGateway, sessionId: string): Promise<string[]> {
  return readdir(join(workspaceOf(gateway, sessionId), '.agent', 'scripts')).catch(() => []);
}

export async function readRecord(gateway: TestGateway, sessionId: string, detailsDir: string, file: string) {
  return readFile(join(workspaceOf(gateway, sessionId), detailsDir, file), 'utf8');
}

export interface ApiApproval {
  id: string;
  kind: string;
  tools: string[];
  script: string | null;
  description: string | null;
  options: string[];
  decision: string | null;
  channel: string | null;
}

export async function approvalsOf(gateway: TestGateway, sessionId: string, status = 'all'): Promise<ApiApproval[]> {
  const response = await fetch(
    `${gateway.url}/api/approvals?status=${status}&session=${encodeURIComponent(sessionId)}`,
    { headers: { Authorization: `Bearer ${tokens.admin}` } },
  );
  return ((await response.json()) as { approvals: ApiApproval[] }).approvals;
}

export async function pendingFor(gateway: TestGateway, sessionId: string): Promise<ApiApproval> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const [pending] = await approvalsOf(gateway, sessionId, 'pending');
    if (pending !== undefined) return pending;
    await sleep(50);
  }
  throw new Error(`no pending approval for ${sessionId}`);
}

export function decide(gateway: TestGateway, id: string, decision: string): Promise<Response> {
  return fetch(`${gateway.url}/api/approvals/${id}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${tokens.admin}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ decision }),
  });
}

/** Which of `pids` still exist as live processes. */
export async function stillAlive(pids: number[]): Promise<number[]> {
  const alive = await Promise.all(
    pids.map(async (pid) => {
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      return status !== '' && !/^State:\s+Z/m.test(status);
    }),
  );
  return pids.filter((_, index) => alive[index]);
}

/** What an MCP progress notification carries, as the client's `onprogress` receives it. */
export interface ProgressUpdate {
  progress: number;
  total?: number | undefined;
  message?: string | undefined;
}

/** The `label` a device reports now (null when never labelled). */
export async function labelOf(client: Client, sn: string): Promise<unknown> {
  const result = await client.callTool({ name: 'fleet__get_device_status', arguments: { sn } });
  return (result.structuredContent as { label: unknown } | undefined)?.label;
}

/** A script that labels one device and then leaves `ran.txt` behind, so a run that should not happen shows. */
export function labelScript(sn: string, label: string): string {
  return (
    `from agent_tools import call\nprint(call("fleet__set_device_label", {"sn": "${sn}", "label": "${label}"}))\n` +
    `open("ran.txt", "w").write("ran")\n`
  );
}

export async function auditOf(gateway: TestGateway, sessionId: string) {
  return (await gateway.gateway.store.queryCalls({ sessionId })).rows;
}

export async function waitFor<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`nothing after ${ms} ms`);
    await sleep(25);
  }
}

interface ProcessInfo {
  ppid: number;
  uid: number;
  cmdline: string;
}

async function processTable(): Promise<Map<number, ProcessInfo>> {
  const table = new Map<number, ProcessInfo>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const status = await readFile(`/proc/${name}/status`, 'utf8').catch(() => '');
    if (status === '' || /^State:\s+Z/m.test(status)) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    table.set(Number(name), {
      ppid: Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]),
      uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]),
      cmdline: cmdline.replaceAll('\0', ' '),
    });
  }
  return table;
}

const isSandboxUid = (uid: number | undefined): boolean => uid !== undefined && uid >= 61_000 && uid <= 61_063;

/**
 * The host pids of the script whose child carries `marker` on its command line: from that child up through
 * its sandbox-uid ancestors (uids 61000–61063), then every descendant of the topmost one. Found by marker
 * rather than by uid alone, so sandboxes of other test runs on the host are left out.
 */
export async function scriptTree(marker: string): Promise<number[]> {
  const table = await processTable();
  const marked = [...table].find(([, info]) => info.cmdline.includes(marker));
  if (marked === undefined) return [];
  let top = marked[0];
  while (isSandboxUid(table.get(table.get(top)!.ppid)?.uid)) top = table.get(top)!.ppid;
  const tree = [top];
  for (let index = 0; index < tree.length; index++) {
    for (const [pid, info] of table) if (info.ppid === tree[index]) tree.push(pid);
  }
  return tree;
}

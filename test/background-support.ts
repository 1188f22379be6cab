import { createHmac } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { textOf } from './harness.js';

// Shared by the background-call e2e files: free ports, a webhook receiver, the process table, waiting.

export const webhookSecret = 'webhook-secret-0123456789abcdef';

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A port that was free a moment ago, for configs the CLI has to reach (port 0 would not tell it). */
export async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Polls `probe` until it returns something other than undefined. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  ms = 8_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

export interface WebhookRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status the receiver answered. */
  answered: number;
  at: number;
}

export interface WebhookReceiver {
  url(path: string): string;
  requests: WebhookRequest[];
  /** Requests for one background call (by its `X-Toolgate-Delivery` header). */
  deliveriesOf(id: string): WebhookRequest[];
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 that records every request and answers what `answer` says. */
export async function startWebhookReceiver(
  answer: (path: string, earlierAttempts: number) => number,
): Promise<WebhookReceiver> {
  const requests: WebhookRequest[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const delivery = String(request.headers['x-toolgate-delivery']);
      const earlier = requests.filter((seen) => seen.headers['x-toolgate-delivery'] === delivery).length;
      const path = request.url ?? '/';
      const status = answer(path, earlier);
      requests.push({
        path,
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        answered: status,
        at: Date.now(),
      });
      response.writeHead(status, { 'Content-Type': 'text/plain' }).end(status === 200 ? 'ok' : 'failing on purpose');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    requests,
    deliveriesOf: (id) => requests.filter((request) => request.headers['x-toolgate-delivery'] === id),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Checks the HMAC header of a recorded webhook request and returns its parsed body. */
export function verifiedBody(request: WebhookRequest): Record<string, unknown> {
  const expected = `sha256=${createHmac('sha256', webhookSecret).update(request.body).digest('hex')}`;
  expect(request.headers['x-toolgate-signature']).toBe(expected);
  expect(request.headers['content-type']).toMatch(/^application\/json/);
  return JSON.parse(request.body) as Record<string, unknown>;
}

export const movedText = /moved to background as (bg_[A-Za-z0-9_-]+); the result will be delivered as a new message/;

/** The bg id of a reply that says the work moved to the background, checked in text and structured content. */
export function movedId(result: { content?: unknown; structuredContent?: unknown; isError?: unknown }): string {
  const text = textOf(result);
  const match = movedText.exec(text);
  expect(match, text).not.toBeNull();
  const id = match![1]!;
  const structured = result.structuredContent as { background?: boolean; id?: string; message?: string };
  expect(structured).toMatchObject({ background: true, id });
  expect(structured.message).toMatch(movedText);
  expect(result.isError).not.toBe(true);
  return id;
}

/** The text blocks of a tool result that carry a finished background call (channel a). */
export function backgroundNotes(result: { content?: unknown }): string[] {
  const content = (result.content ?? []) as Array<{ type: string; text?: string }>;
  return content.flatMap((block) =>
    block.text?.startsWith('[toolgate: background call ') === true ? [block.text] : [],
  );
}

export interface ProcessInfo {
  pid: number;
  ppid: number;
  uid: number;
  cmdline: string;
}

/** Live (non-zombie) processes on this host. */
export async function processTable(): Promise<ProcessInfo[]> {
  const table: ProcessInfo[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const status = await readFile(`/proc/${name}/status`, 'utf8').catch(() => '');
    if (status === '' || /^State:\s+Z/m.test(status)) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    table.push({
      pid: Number(name),
      ppid: Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]),
      uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]),
      cmdline: cmdline.replaceAll('\0', ' '),
    });
  }
  return table;
}

export const isSandboxUid = (uid: number): boolean => uid >= 61_000 && uid <= 61_063;

const isBwrap = (info: ProcessInfo): boolean => /^(\S*\/)?bwrap /.test(info.cmdline);

function descendants(table: readonly ProcessInfo[], roots: readonly ProcessInfo[]): ProcessInfo[] {
  const tree = [...roots];
  for (let index = 0; index < tree.length; index++) {
    tree.push(...table.filter((info) => info.ppid === tree[index]!.pid));
  }
  return tree;
}

/**
 * The sandboxes of one gateway (found by its data dir on bwrap's command line) with everything in them. Other
 * gateways on this host, e.g. other test runs, use the same uid range, so the uid alone would not say whose.
 */
export async function sandboxProcessesOf(dataDir: string): Promise<ProcessInfo[]> {
  const table = await processTable();
  const roots = table.filter((info) => isBwrap(info) && info.cmdline.includes(dataDir));
  return descendants(table, roots).filter((info) => isBwrap(info) || isSandboxUid(info.uid));
}

/** The processes of the script whose child carries `marker`: its bwrap and every descendant. */
export async function scriptProcesses(marker: string): Promise<ProcessInfo[]> {
  const table = await processTable();
  const byPid = new Map(table.map((info) => [info.pid, info]));
  let top = table.find((info) => isSandboxUid(info.uid) && info.cmdline.includes(marker));
  if (top === undefined) return [];
  for (let parent = byPid.get(top.ppid); parent !== undefined && (isSandboxUid(parent.uid) || isBwrap(parent));) {
    top = parent;
    parent = byPid.get(top.ppid);
  }
  return descendants(table, [top]);
}

export async function stillAlive(pids: readonly number[]): Promise<number[]> {
  const live = new Set((await processTable()).map((info) => info.pid));
  return pids.filter((pid) => live.has(pid));
}

/** A script that starts a child carrying `marker` (so the test can find its tree) and sleeps `seconds`. */
export function sleepingScript(marker: string, seconds: number, message = 'slept well'): string {
  return `
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(${seconds})", "${marker}"])
time.sleep(${seconds})
print("${message}", flush=True)
`;
}

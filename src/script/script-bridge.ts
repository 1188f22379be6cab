import type { Readable, Writable } from 'node:stream';
import {
  encodeReply,
  parseRequestLine,
  toToolError,
  type BridgeReply,
  type CallRequest,
  type ProgressRequest,
} from './bridge-protocol.js';
import type { CallGate } from './call-gate.js';
import { LineFramer, type FramedLine } from './line-framer.js';
import type { CallRecord } from './script-records.js';

export interface CallToolResult {
  text: string;
  structured?: Record<string, unknown> | null;
  isError: boolean;
}

/** The gateway's call pipeline, given by the core; it may throw a GatewayError. */
export type CallTool = (tool: string, args: Record<string, unknown>, signal: AbortSignal) => Promise<CallToolResult>;

export interface ScriptBridgeOptions {
  /** The sandbox's fd 3 (requests, bytes) and fd 4 (replies). */
  requests: Readable;
  replies: Writable;
  maxLineBytes: number;
  gate: CallGate;
  callTool: CallTool;
  /** Aborted when the script has ended: calls still running are cancelled. */
  signal: AbortSignal;
  onCall: (record: CallRecord) => void;
  onProgress: (report: ProgressRequest) => void;
}

const ARGS_RECORD_CHARS = 4096;
/** Refused calls recorded in calls.jsonl; a script looping on a refusal must not fill the disk. */
const REFUSALS_RECORDED = 100;
const SUMMARY_CHARS = 200;

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** What calls.jsonl keeps of the arguments: all of them, unless they are large. */
function recordedArgs(args: Record<string, unknown>): unknown {
  const json = JSON.stringify(args);
  return json.length > ARGS_RECORD_CHARS ? { truncated: shorten(json, ARGS_RECORD_CHARS) } : args;
}

/**
 * The gateway side of fd 3/4: frames and parses requests, runs calls through the gate and the
 * pipeline, answers every request that has an id, and counts. Never throws on what a script writes.
 */
export class ScriptBridge {
  readonly #options: ScriptBridgeOptions;
  readonly #framer: LineFramer;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #ended: Promise<void>;
  calls = 0;
  failures = 0;
  #refusals = 0;
  readonly callsPerTool: Record<string, number> = {};

  constructor(options: ScriptBridgeOptions) {
    this.#options = options;
    this.#framer = new LineFramer(options.maxLineBytes);
    const { requests, replies } = options;
    // With fd 4 gone there is no one to hold replies for: read fd 3 to its end.
    replies.once('close', () => requests.resume());
    this.#ended = new Promise((resolve) => {
      requests.on('data', (chunk: Buffer) => {
        for (const line of this.#framer.push(chunk)) this.#handle(line);
      });
      requests.once('close', () => {
        for (const line of this.#framer.end()) this.#handle(line);
        resolve();
      });
    });
  }

  /** Resolves when fd 3 is closed and every call has settled. */
  async settled(): Promise<void> {
    await this.#ended;
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  #handle(line: FramedLine): void {
    const parsed = parseRequestLine(line, this.#options.maxLineBytes);
    switch (parsed.kind) {
      case 'empty':
        return;
      case 'progress':
        this.#options.onProgress(parsed.request);
        return;
      case 'invalid':
        if (parsed.id !== null)
          this.#reply({ id: parsed.id, ok: false, error: { code: parsed.code, message: parsed.message } });
        return;
      case 'call': {
        const task = this.#call(parsed.request).finally(() => this.#inFlight.delete(task));
        this.#inFlight.add(task);
        return;
      }
    }
  }

  async #call({ id, tool, args }: CallRequest): Promise<void> {
    const { gate, callTool, signal } = this.#options;
    this.calls += 1;
    this.callsPerTool[tool] = (this.callsPerTool[tool] ?? 0) + 1;
    const record = (durationMs: number, isError: boolean, summary: string, errorCode?: string): void => {
      if (isError) this.failures += 1;
      if (errorCode === 'limit' && ++this.#refusals > REFUSALS_RECORDED) return;
      this.#options.onCall({
        time: new Date().toISOString(),
        tool,
        args: recordedArgs(args),
        durationMs: Math.round(durationMs),
        isError,
        ...(errorCode === undefined ? {} : { errorCode }),
        summary: shorten(summary, SUMMARY_CHARS),
      });
    };
    if (!gate.admit()) {
      const message = 'the script has made its maximum number of tool calls';
      this.#reply({ id, ok: false, error: { code: 'limit', message } });
      record(0, true, message, 'limit');
      return;
    }
    let started = 0;
    try {
      const result = await gate.run(() => {
        started = performance.now();
        if (signal.aborted) throw signal.reason;
        return callTool(tool, args, signal);
      });
      const structured = result.structured ?? null;
      this.#reply({ id, ok: true, result: { text: result.text, structured, is_error: result.isError } });
      record(performance.now() - started, result.isError, result.text || JSON.stringify(structured));
    } catch (error) {
      const failure = toToolError(error);
      this.#reply({ id, ok: false, error: failure });
      record(started === 0 ? 0 : performance.now() - started, true, failure.message, failure.code);
    }
  }

  /** Writes one reply; while fd 4 is backed up, fd 3 is not read, so unread replies cannot pile up. */
  #reply(reply: BridgeReply): void {
    const { replies, requests } = this.#options;
    if (replies.destroyed || replies.writableEnded) return;
    if (!replies.write(encodeReply(reply)) && !requests.isPaused()) {
      requests.pause();
      replies.once('drain', () => requests.resume());
    }
  }
}

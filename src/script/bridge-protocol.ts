import { z } from 'zod';
import { describeForClient, isGatewayError } from '../errors/gateway-error.js';
import type { FramedLine } from './line-framer.js';

/** The codes agent_tools.ToolError can carry (PRODUCT.md §4). */
export type ToolErrorCode =
  'tool_error' | 'not_allowed' | 'unknown_tool' | 'invalid_args' | 'limit' | 'unavailable' | 'timeout';

const requestIdSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/** fd 3: call one tool. */
export const callRequestSchema = z.object({
  id: requestIdSchema,
  op: z.literal('call'),
  tool: z.string().min(1).max(256),
  args: z.record(z.string(), z.unknown()),
});

/** fd 3: progress report, no reply (an id is accepted but not needed). */
export const progressRequestSchema = z.object({
  id: requestIdSchema.optional(),
  op: z.literal('progress'),
  done: z.number().nonnegative(),
  total: z.number().nonnegative().nullable().optional(),
  message: z.string().max(1000).optional(),
});

export const bridgeRequestSchema = z.discriminatedUnion('op', [callRequestSchema, progressRequestSchema]);

export type CallRequest = z.infer<typeof callRequestSchema>;
export type ProgressRequest = z.infer<typeof progressRequestSchema>;
export type BridgeRequest = z.infer<typeof bridgeRequestSchema>;

/** A tool's result as the script sees it. */
export interface ToolResult {
  text: string;
  structured: Record<string, unknown> | null;
  is_error: boolean;
}

/** fd 4 replies. */
export type BridgeReply =
  | { id: number; ok: true; result: ToolResult }
  | { id: number; ok: false; error: { code: ToolErrorCode; message: string } };

/** What one fd 3 line turned out to be. */
export type ParsedLine =
  | { kind: 'call'; request: CallRequest }
  | { kind: 'progress'; request: ProgressRequest }
  | { kind: 'empty' }
  /** `id` is null when none could be recovered: then there is no one to reply to. */
  | { kind: 'invalid'; id: number | null; code: ToolErrorCode; message: string };

const LEADING_ID = /^\s*\{\s*"id"\s*:\s*(\d{1,16})\s*[,}]/;

/** agent_tools writes `"id"` first, so even a line too long or too broken to parse names its request. */
export function recoverRequestId(head: string): number | null {
  const match = LEADING_ID.exec(head);
  const id = match?.[1] === undefined ? NaN : Number(match[1]);
  return Number.isSafeInteger(id) ? id : null;
}

function idOf(value: unknown): number | null {
  if (typeof value !== 'object' || value === null || !('id' in value)) return null;
  const parsed = requestIdSchema.safeParse(value.id);
  return parsed.success ? parsed.data : null;
}

/** Parses one framed fd 3 line; never throws. */
export function parseRequestLine(line: FramedLine, maxLineBytes: number): ParsedLine {
  switch (line.kind) {
    case 'too_long':
      return {
        kind: 'invalid',
        id: recoverRequestId(line.head),
        code: 'limit',
        message: `request line of ${line.bytes} bytes is over the limit of ${maxLineBytes} bytes`,
      };
    case 'invalid_utf8':
      return {
        kind: 'invalid',
        id: recoverRequestId(line.head),
        code: 'invalid_args',
        message: 'request is not valid UTF-8',
      };
    case 'line':
      break;
  }
  if (line.text.trim() === '') return { kind: 'empty' };
  let json: unknown;
  try {
    json = JSON.parse(line.text);
  } catch {
    return {
      kind: 'invalid',
      id: recoverRequestId(line.text),
      code: 'invalid_args',
      message: 'request is not valid JSON',
    };
  }
  const parsed = bridgeRequestSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    return {
      kind: 'invalid',
      id: idOf(json),
      code: 'invalid_args',
      message: `malformed request${where}: ${issue?.message ?? 'invalid'}`,
    };
  }
  return parsed.data.op === 'call'
    ? { kind: 'call', request: parsed.data }
    : { kind: 'progress', request: parsed.data };
}

/** Maps a failure of the gateway's pipeline to a ToolError code; an internal fault says nothing more than that. */
export function toToolError(error: unknown): { code: ToolErrorCode; message: string } {
  if (!isGatewayError(error)) return { code: 'unavailable', message: describeForClient(error) };
  switch (error.code) {
    case 'not_allowed':
    case 'needs_approval':
    case 'input_required':
    case 'denied':
    case 'approval_expired':
    case 'unauthorized':
      return { code: 'not_allowed', message: error.message };
    case 'unknown_tool':
    case 'not_offered':
    case 'not_found':
      return { code: 'unknown_tool', message: error.message };
    case 'invalid_args':
      return { code: 'invalid_args', message: error.message };
    case 'limit':
      return { code: 'limit', message: error.message };
    case 'timeout':
      return { code: 'timeout', message: error.message };
    case 'tool_error':
      return { code: 'tool_error', message: error.message };
    case 'unavailable':
    case 'cancelled':
    case 'conflict':
    case 'config_invalid':
    case 'sandbox_unavailable':
    case 'internal':
      return { code: 'unavailable', message: error.message };
    default:
      // A code added later reaches the script as a generic failure until it is mapped here.
      return { code: 'unavailable', message: error.message };
  }
}

/** One reply line for fd 4. */
export function encodeReply(reply: BridgeReply): string {
  return `${JSON.stringify(reply)}\n`;
}

/** The first line on fd 4: the script itself, read by the bootstrap before user code runs. */
export function encodeStart(code: string): string {
  return `${JSON.stringify({ op: 'start', code })}\n`;
}

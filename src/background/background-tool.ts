import { z } from 'zod';
import type { BuiltinTool } from '../downstream/builtin-tool.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { BackgroundCall } from '../store/store-records.js';
import { describeFinished, type BackgroundCalls } from './background-calls.js';

const argumentsSchema = z.discriminatedUnion('action', [
  z.object({ action: z.literal('list') }),
  z.object({ action: z.literal('get'), id: z.string().min(1) }),
  z.object({ action: z.literal('cancel'), id: z.string().min(1) }),
]);

function line(call: BackgroundCall): string {
  const elapsed = Math.round(((call.finishedAt ?? Date.now()) - call.startedAt) / 1000);
  return `${call.id}  ${call.tool}  ${call.status}  ${elapsed} s`;
}

/** Channel (d): the session's own background calls, listed, read or cancelled by id. */
export function createBackgroundTool(background: BackgroundCalls, sessionId: string): BuiltinTool {
  return {
    definition: {
      name: 'background_calls',
      title: 'Background calls of this session',
      description:
        'Long calls and scripts that moved to the background (the reply said "moved to background as bg_…"). ' +
        'action "list" lists this session’s background calls; "get" with an id returns its status and, when it ' +
        'has ended, its result; "cancel" with an id stops it. Results are also delivered on their own with your next tool result.',
      inputSchema: {
        type: 'object',
        properties: {
          action: { type: 'string', enum: ['list', 'get', 'cancel'] },
          id: { type: 'string', description: 'the bg_… id, for get and cancel' },
        },
        required: ['action'],
      },
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    },
    async call(args) {
      const parsed = argumentsSchema.safeParse(args);
      if (!parsed.success)
        throw new GatewayError('invalid_args', 'use {"action": "list"} or {"action": "get"|"cancel", "id": "bg_…"}');
      const request = parsed.data;
      switch (request.action) {
        case 'list': {
          const calls = await background.list(sessionId);
          return {
            content: [
              {
                type: 'text',
                text: calls.length === 0 ? 'no background calls in this session' : calls.map(line).join('\n'),
              },
            ],
            structuredContent: {
              calls: calls.map(({ id, tool, status, startedAt, finishedAt }) => ({
                id,
                tool,
                status,
                startedAt,
                finishedAt,
              })),
            },
          };
        }
        case 'get': {
          const call = await background.read(request.id, sessionId);
          const text = call.status === 'running' ? `${line(call)} (still running)` : describeFinished(call);
          return {
            content: [{ type: 'text', text }],
            structuredContent: { id: call.id, tool: call.tool, status: call.status },
          };
        }
        case 'cancel': {
          const call = await background.cancel(request.id, sessionId);
          return {
            content: [{ type: 'text', text: `${call.id}: ${call.status}` }],
            structuredContent: { id: call.id, status: call.status },
          };
        }
      }
    },
  };
}

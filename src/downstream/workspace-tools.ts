import { z } from 'zod';
import { GatewayError } from '../errors/gateway-error.js';
import type { Workspaces } from '../sessions/workspace.js';
import type { BuiltinTool } from './builtin-tool.js';
import type { WorkspaceResources } from './gateway-server.js';

const uriPrefix = 'workspace:///';
const maxReadLength = 100_000;

const readArgumentsSchema = z.object({
  path: z.string().min(1, 'path is required'),
  offset: z.number().int().min(0).default(0),
  length: z.number().int().min(1).max(maxReadLength).default(20_000),
});

function mimeTypeOf(path: string): string {
  if (path.endsWith('.json') || path.endsWith('.jsonl')) return 'application/json';
  if (path.endsWith('.py')) return 'text/x-python';
  return 'text/plain';
}

/** The built-in tool that reads a file of the caller's own workspace, by byte range. */
export function createReadFileTool(workspaces: Workspaces, sessionId: string): BuiltinTool {
  return {
    definition: {
      name: 'read_workspace_file',
      title: 'Read a file of this session’s workspace',
      description:
        'Read a file from this session’s workspace (where toolgate saves full results, script output and files ' +
        'scripts write), by relative path, e.g. ".agent/results/12-list_devices.json". Reads `length` bytes ' +
        `from byte \`offset\` (default 0, 20000; at most ${maxReadLength}). The reply says the file size and whether the end was reached.`,
      inputSchema: {
        type: 'object',
        properties: {
          path: { type: 'string', description: 'path relative to the workspace' },
          offset: { type: 'integer', minimum: 0, description: 'byte offset, default 0' },
          length: { type: 'integer', minimum: 1, maximum: maxReadLength, description: 'bytes to read, default 20000' },
        },
        required: ['path'],
      },
      annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    },
    async call(args) {
      const parsed = readArgumentsSchema.safeParse(args);
      if (!parsed.success) {
        throw new GatewayError(
          'invalid_args',
          parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '),
        );
      }
      const { path, offset, length } = parsed.data;
      const read = await workspaces.readFile(sessionId, path, { offset, length, as: 'text' });
      if (read.kind !== 'text') throw new GatewayError('internal', 'unexpected binary read');
      const end = read.offset + Buffer.byteLength(read.text);
      const footer = read.eof
        ? `\n[${path}: bytes ${read.offset}-${end} of ${read.size}; end of file]`
        : `\n[${path}: bytes ${read.offset}-${end} of ${read.size}; more follows — call again with offset ${end}]`;
      return {
        content: [{ type: 'text', text: read.text + footer }],
        structuredContent: { path, offset: read.offset, size: read.size, eof: read.eof },
      };
    },
  };
}

export function createWorkspaceResources(workspaces: Workspaces): WorkspaceResources {
  return {
    async list(sessionId) {
      const { paths } = await workspaces.list(sessionId, { maxEntries: 1000 });
      return paths.map((path) => ({ uri: uriPrefix + encodeURI(path), name: path, mimeType: mimeTypeOf(path) }));
    },
    async read(sessionId, uri) {
      if (!uri.startsWith(uriPrefix))
        throw new GatewayError('not_found', `not a workspace resource: ${uri.slice(0, 200)}`);
      const path = decodeURI(uri.slice(uriPrefix.length));
      const read = await workspaces.readFile(sessionId, path, { as: 'text' });
      if (read.kind !== 'text') throw new GatewayError('internal', 'unexpected binary read');
      return { uri, mimeType: mimeTypeOf(path), text: read.text };
    },
  };
}

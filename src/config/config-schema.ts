import { z } from 'zod';

/** A service started as a child process and spoken to over stdio (Claude Desktop's shape). */
export const stdioServerSchema = z
  .object({
    type: z.literal('stdio').optional(),
    command: z.string().min(1, 'must be a non-empty command'),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
  })
  .strict();

/** A service reached over Streamable HTTP. */
export const httpServerSchema = z
  .object({
    type: z.enum(['http', 'streamable-http']).optional(),
    url: z.url({ message: 'must be an http(s) URL' }),
    headers: z.record(z.string(), z.string()).default({}),
  })
  .strict();

export const serverSchema = z.union([stdioServerSchema, httpServerSchema], {
  error: 'must have either "command" (stdio) or "url" (Streamable HTTP)',
});

export const toolClassSchema = z.enum(['read', 'write', 'destructive']);

export const toolOverrideSchema = z
  .object({
    class: toolClassSchema.optional(),
    longTask: z.boolean().optional(),
    disabled: z.boolean().optional(),
  })
  .strict();

const tokenSchema = z.string().min(16, 'tokens must be at least 16 characters');

export const webhookSchema = z
  .object({
    url: z.url({ message: 'must be an http(s) URL' }),
    secret: z.string().min(16, 'the webhook secret must be at least 16 characters'),
  })
  .strict();

export const profileSchema = z
  .object({
    services: z.array(z.string().min(1)).default([]),
    mode: z.enum(['approve', 'auto']).default('approve'),
    readOnly: z.boolean().default(false),
    tokens: z.array(tokenSchema).default([]),
    webhook: webhookSchema.optional(),
  })
  .strict();

export const scriptSettingsSchema = z
  .object({
    maxCalls: z.number().int().positive().default(2000),
    concurrency: z.number().int().positive().max(64).default(4),
    timeoutSec: z.number().positive().default(1800),
    memoryMb: z.number().int().positive().default(1024),
    maxProcesses: z.number().int().positive().default(64),
    maxFileSizeMb: z.number().int().positive().default(256),
    maxOpenFiles: z.number().int().positive().default(256),
    maxWorkspaceMb: z.number().int().positive().default(2048),
    maxOutputMb: z.number().int().positive().default(2048),
    maxLineKb: z.number().int().positive().default(1024),
  })
  .strict();

export const settingsSchema = z
  .object({
    scripts: scriptSettingsSchema.prefault({}),
    backgroundCalls: z
      .object({ autoAfterSec: z.number().positive().default(30) })
      .strict()
      .prefault({}),
    results: z
      .object({ maxChars: z.number().int().positive().default(20_000) })
      .strict()
      .prefault({}),
    approvals: z
      .object({ timeoutSec: z.number().positive().default(600) })
      .strict()
      .prefault({}),
    calls: z
      .object({ timeoutSec: z.number().positive().default(300) })
      .strict()
      .prefault({}),
  })
  .strict();

export const configSchema = z
  .object({
    $schema: z.string().optional(),
    dataDir: z.string().min(1).optional(),
    listen: z
      .object({
        host: z.string().min(1).default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).default(8717),
      })
      .strict()
      .prefault({}),
    adminToken: tokenSchema.optional(),
    mcpServers: z.record(
      z.string().regex(/^[A-Za-z0-9-]{1,32}$/, 'service names are 1-32 letters, digits or "-"'),
      serverSchema,
    ),
    tools: z.record(z.string().min(1), toolOverrideSchema).default({}),
    profiles: z.record(
      z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'profile names are 1-64 letters, digits, "_" or "-"'),
      profileSchema,
    ),
    settings: settingsSchema.prefault({}),
  })
  .strict();

export type StdioServer = z.infer<typeof stdioServerSchema>;
export type HttpServer = z.infer<typeof httpServerSchema>;
export type ServerConfig = z.infer<typeof serverSchema>;
export type ToolClass = z.infer<typeof toolClassSchema>;
export type ToolOverride = z.infer<typeof toolOverrideSchema>;
export type Profile = z.infer<typeof profileSchema>;
export type Webhook = z.infer<typeof webhookSchema>;
export type ScriptSettings = z.infer<typeof scriptSettingsSchema>;
export type Settings = z.infer<typeof settingsSchema>;
export type Config = z.infer<typeof configSchema>;

export function isStdioServer(server: ServerConfig): server is StdioServer {
  return 'command' in server;
}

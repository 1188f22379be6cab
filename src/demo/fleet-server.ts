import { realpathSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/server';
import type { CallToolResult, ServerContext } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { StdioServerHandle } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { FLEET_SITES, generateFleet, listDevicePage, summarizeFleet } from './fleet-data.js';
import type { Device } from './fleet-data.js';
import { DEFAULT_REPORT_SECONDS, parseFleetOptions } from './fleet-options.js';
import type { FleetOptions } from './fleet-options.js';

/** The mutable side of the demo (labels, reboots), shared by every server instance of one process. */
export type FleetState = {
  devices: readonly Device[];
  labels: Map<string, string>;
  rebootedAt: Map<string, string>;
};

export type FleetServerDependencies = {
  options?: Partial<FleetOptions>;
  state?: FleetState;
  now?: () => Date;
  /** Called by the crash test hook; the stdio entry passes `process.exit`. */
  exit?: (code: number) => void;
};

const REPORT_STEPS = 50;
const CRASH_DELAY_MS = 200;

const SerialNumberSchema = z.string().min(1).describe('Device serial number, e.g. FL-000123');

const DeviceSummarySchema = z.object({ sn: z.string(), site: z.string(), model: z.string() });

const DevicePageSchema = z.object({
  devices: z.array(DeviceSummarySchema),
  nextCursor: z.string().optional(),
  total: z.number().int(),
});

const DeviceStatusSchema = z.object({
  sn: z.string(),
  site: z.string(),
  model: z.string(),
  firmware: z.string(),
  status: z.enum(['online', 'degraded', 'offline']),
  health: z.number().int().min(0).max(100),
  temperatureC: z.number(),
  uptimeHours: z.number().int(),
  lastSeen: z.string(),
  label: z.string().nullable(),
  rebooting: z.boolean(),
});

const StatusCountsSchema = z.object({
  online: z.number().int(),
  degraded: z.number().int(),
  offline: z.number().int(),
});

const FleetReportSchema = z.object({
  generatedFor: z.string(),
  total: z.number().int(),
  byStatus: StatusCountsSchema,
  bySite: z.array(StatusCountsSchema.extend({ site: z.string(), total: z.number().int() })),
  rebooting: z.number().int(),
  labelled: z.number().int(),
});

export function createFleetState(): FleetState {
  return { devices: generateFleet(), labels: new Map(), rebootedAt: new Map() };
}

function jsonResult(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

async function sendProgress(ctx: ServerContext, progress: number, total: number, message: string): Promise<void> {
  const progressToken = ctx.mcpReq._meta?.progressToken;
  // Progress is only meaningful to a client that asked for it with a token.
  if (progressToken === undefined) return;
  await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress, total, message } });
}

/** Builds one MCP server for the fleet demo; pass the same `state` to every instance of a process. */
export function createFleetServer(dependencies: FleetServerDependencies = {}): McpServer {
  const state = dependencies.state ?? createFleetState();
  const options = { noErrors: false, reportSeconds: DEFAULT_REPORT_SECONDS, ...dependencies.options };
  const now = dependencies.now ?? (() => new Date());
  const exit = dependencies.exit ?? ((code: number) => process.exit(code));
  const bySerialNumber = new Map(state.devices.map((device) => [device.sn, device]));

  const server = new McpServer(
    { name: 'fleet', version: '0.1.0' },
    {
      capabilities: { tools: {} },
      instructions: `A simulated fleet of ${state.devices.length} devices across ${FLEET_SITES.length} sites.`,
    },
  );

  server.registerTool(
    'list_devices',
    {
      title: 'List devices',
      description: 'Lists devices page by page (serial number, site, model); pass nextCursor to get the next page.',
      inputSchema: z.object({
        cursor: z.string().optional().describe('nextCursor from the previous page'),
        pageSize: z.number().int().min(1).max(500).default(100),
        site: z
          .string()
          .optional()
          .describe(`Only this site: ${FLEET_SITES.join(', ')}`),
      }),
      outputSchema: DevicePageSchema,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ cursor, pageSize, site }) => {
      const page = listDevicePage(state.devices, { cursor, pageSize, site });
      return page.ok ? jsonResult(page.value) : toolError(page.message);
    },
  );

  server.registerTool(
    'get_device_status',
    {
      title: 'Get device status',
      description: 'Asks the device controller for one device status, health and metrics (5–50 ms per call).',
      inputSchema: z.object({ sn: SerialNumberSchema }),
      outputSchema: DeviceStatusSchema,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ sn }, ctx) => {
      if (sn === options.crashOnSn) {
        // Test hook (FLEET_CRASH_ON_SN): die mid-call so the gateway sees a service crash.
        process.stderr.write(`fleet: test hook FLEET_CRASH_ON_SN=${sn}, exiting in ${CRASH_DELAY_MS} ms\n`);
        setTimeout(() => exit(1), CRASH_DELAY_MS);
        await sleep(CRASH_DELAY_MS * 5, undefined, { signal: ctx.mcpReq.signal });
      }
      const device = bySerialNumber.get(sn);
      if (device === undefined) return toolError(`unknown device ${sn}`);
      await sleep(options.fixedLatencyMs ?? device.latencyMs, undefined, { signal: ctx.mcpReq.signal });
      if (device.unanswering && !options.noErrors) {
        return toolError(`device ${sn} did not answer: timeout talking to controller`);
      }
      const { latencyMs: _latencyMs, unanswering: _unanswering, ...status } = device;
      return jsonResult({ ...status, label: state.labels.get(sn) ?? null, rebooting: state.rebootedAt.has(sn) });
    },
  );

  server.registerTool(
    'set_device_label',
    {
      title: 'Set device label',
      description: 'Sets the free-text label of a device and returns the previous one.',
      inputSchema: z.object({ sn: SerialNumberSchema, label: z.string().max(200) }),
      outputSchema: z.object({ sn: z.string(), label: z.string(), previous: z.string().nullable() }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ sn, label }) => {
      if (!bySerialNumber.has(sn)) return toolError(`unknown device ${sn}`);
      const previous = state.labels.get(sn) ?? null;
      state.labels.set(sn, label);
      return jsonResult({ sn, label, previous });
    },
  );

  server.registerTool(
    'reboot_device',
    {
      title: 'Reboot device',
      description: 'Reboots a device: it drops its connections and is unavailable for a few minutes.',
      inputSchema: z.object({ sn: SerialNumberSchema }),
      outputSchema: z.object({ sn: z.string(), rebooted: z.literal(true), at: z.string() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    ({ sn }) => {
      if (!bySerialNumber.has(sn)) return toolError(`unknown device ${sn}`);
      const at = now().toISOString();
      state.rebootedAt.set(sn, at);
      return jsonResult({ sn, rebooted: true, at });
    },
  );

  server.registerTool(
    'export_fleet_report',
    {
      title: 'Export fleet report',
      description: `Scans every device and returns counts per site and status; takes about ${options.reportSeconds} s and reports progress.`,
      outputSchema: FleetReportSchema,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async (ctx) => {
      const total = state.devices.length;
      const stepMs = (options.reportSeconds * 1000) / REPORT_STEPS;
      for (let step = 1; step <= REPORT_STEPS; step++) {
        // Sleeping on the request's signal makes a cancelled report stop within one step.
        await sleep(stepMs, undefined, { signal: ctx.mcpReq.signal });
        const scanned = Math.round((step * total) / REPORT_STEPS);
        const site = state.devices[scanned - 1]?.site ?? '';
        await sendProgress(ctx, scanned, total, `scanned ${scanned}/${total} devices (${site})`);
      }
      return jsonResult({
        ...summarizeFleet(state.devices),
        rebooting: state.rebootedAt.size,
        labelled: state.labels.size,
      });
    },
  );

  return server;
}

/** Serves the fleet demo on this process's stdin/stdout, configured by the `FLEET_*` variables. */
export function serveFleetOverStdio(env: Record<string, string | undefined> = process.env): StdioServerHandle {
  const options = parseFleetOptions(env);
  const state = createFleetState();
  const handle = serveStdio(() => createFleetServer({ options, state, exit: (code) => process.exit(code) }), {
    onerror: (error) => process.stderr.write(`fleet: ${error.message}\n`),
  });
  process.stderr.write(
    `fleet: serving ${state.devices.length} devices over stdio (report ${options.reportSeconds} s` +
      `${options.fixedLatencyMs === undefined ? '' : `, latency ${options.fixedLatencyMs} ms`}` +
      `${options.noErrors ? ', no simulated errors' : ''})\n`,
  );
  return handle;
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  return entry !== undefined && import.meta.url === pathToFileURL(realpathSync(entry)).href;
}

if (isEntryPoint()) serveFleetOverStdio();

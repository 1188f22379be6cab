import type { Client } from '@modelcontextprotocol/client';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLEET_SITES, generateFleet } from '../src/demo/fleet-data.js';
import {
  baseConfig,
  connectClient,
  fleetService,
  startTestGateway,
  textOf,
  tokens,
  type Era,
  type TestGateway,
} from './harness.js';
import {
  approvalsOf,
  auditOf,
  labelOf,
  labelScript,
  readRecord,
  runScript,
  scriptDirs,
  summaryLine,
  workspaceOf,
  type ProgressUpdate,
} from './run-script-support.js';

// run_script through the gateway: a real MCP client, the real gateway, real bubblewrap + Python, the real demo
// fleet. The seed's example, where run_script is offered, and the permission rules that need no approval
// (approvals are in run-script-gateway-approvals.test.ts).

const bareToken = 'bare-token-0123456789abcdef';
let gateway: TestGateway;
const clients: Client[] = [];

beforeAll(async () => {
  gateway = await startTestGateway(
    baseConfig({
      // `spare` is a second fleet whose status tool is disabled by configuration.
      mcpServers: { fleet: fleetService(), spare: fleetService() },
      tools: { fleet__export_fleet_report: { longTask: true }, spare__get_device_status: { disabled: true } },
      profiles: {
        ops: { services: ['fleet', 'spare'], mode: 'approve', tokens: [tokens.ops] },
        auto: { services: ['fleet', 'spare'], mode: 'auto', tokens: [tokens.auto] },
        readonly: { services: ['fleet'], mode: 'auto', readOnly: true, tokens: [tokens.readonly] },
        bare: { services: [], mode: 'auto', tokens: [bareToken] },
      },
    }),
  );
});

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await gateway?.close();
});

async function connect(token: string, era: Era, session: string) {
  const client = await connectClient(gateway.mcpUrl, token, era, { session });
  clients.push(client);
  return client;
}

const seedScript = `
from collections import Counter, defaultdict
from agent_tools import call, call_many, progress, ToolError

devices = call("fleet__list_devices", {"pageSize": 500})["devices"]
rows = call_many("fleet__get_device_status", [{"sn": d["sn"]} for d in devices], return_errors=True)
by_site = defaultdict(Counter)
failed = 0
for row in rows:
    if isinstance(row, ToolError):
        failed += 1
    else:
        by_site[row["site"]][row["status"]] += 1
progress(len(rows), len(devices), "summarising")
for site in sorted(by_site):
    c = by_site[site]
    print(f"{site}: online={c['online']} degraded={c['degraded']} offline={c['offline']}")
print(f"devices={len(devices)} failed={failed}")
`;

/** What the seed script must print, computed from the same generated fleet the service serves. */
function expectedSeedOutput(): { output: string; failing: string[] } {
  const fleet = generateFleet();
  const answering = fleet.filter((device) => !device.unanswering);
  const lines = [...FLEET_SITES].sort().map((site) => {
    const count = (status: string) => answering.filter((d) => d.site === site && d.status === status).length;
    return `${site}: online=${count('online')} degraded=${count('degraded')} offline=${count('offline')}`;
  });
  lines.push(`devices=${fleet.length} failed=${fleet.length - answering.length}`);
  return { output: `${lines.join('\n')}\n`, failing: fleet.filter((d) => d.unanswering).map((d) => d.sn) };
}

describe("the seed's example: 500 devices summarised by site in one run_script call", () => {
  it('replies with the summary line, the printed summary and the same fields as structuredContent', async () => {
    const client = await connect(tokens.auto, 'legacy', 'seed');
    const expected = expectedSeedOutput();
    expect(expected.failing).toHaveLength(10);
    const progress: ProgressUpdate[] = [];
    const onprogress = (update: ProgressUpdate) => void progress.push(update);
    const result = await runScript(client, seedScript, [], { onprogress }, 'fleet status by site');

    expect(result.isError, result.text).toBe(false);
    const line = summaryLine.exec(result.firstLine);
    expect(line, result.firstLine).not.toBeNull();
    const [, status, calls, failed, seconds, detailsDir] = line!;
    expect([status, calls, failed]).toEqual(['ok', '501', '10']);
    expect(result.text).toBe(`${result.firstLine}\n${expected.output.trimEnd()}`);
    expect(result.summary).toMatchObject({
      status: 'ok',
      calls: 501,
      failures: 10,
      callsPerTool: { fleet__list_devices: 1, fleet__get_device_status: 500 },
      exitCode: 0,
      detailsDir,
      outputFile: `${detailsDir}output.txt`,
      outputChars: expected.output.length,
      outputTruncated: false,
    });
    // MCP progress only grows and, once the script reported its total, never passes it.
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.map((update) => update.progress)).toEqual(progress.map((u) => u.progress).sort((a, b) => a - b));
    for (const update of progress) expect(update.progress).toBeLessThanOrEqual(update.total ?? Infinity);
    expect(progress.at(-1)?.message).toMatch(/^501 calls \(10 failed\) · summarising$/);
    expect(Math.abs(Number(seconds) - result.summary!.durationMs / 1000)).toBeLessThanOrEqual(0.06);

    // The records, on the gateway's disk.
    const sessionId = 'auto/seed';
    expect(readFileSync(join(workspaceOf(gateway, sessionId), detailsDir!, 'script.py'), 'utf8')).toBe(seedScript);
    expect(await readRecord(gateway, sessionId, detailsDir!, 'output.txt')).toBe(expected.output);
    const lines = (await readRecord(gateway, sessionId, detailsDir!, 'calls.jsonl')).trimEnd().split('\n');
    expect(lines).toHaveLength(501);
    const records = lines.map((text) => JSON.parse(text) as Record<string, unknown>);
    for (const record of records) {
      expect(Object.keys(record)).toEqual(expect.arrayContaining(['time', 'tool', 'args', 'durationMs', 'isError']));
      expect(Number.isNaN(Date.parse(String(record.time)))).toBe(false);
      expect(typeof record.durationMs).toBe('number');
      expect(typeof record.summary).toBe('string');
    }
    expect(records.filter((r) => r.tool === 'fleet__list_devices')).toHaveLength(1);
    const failures = records.filter((r) => r.isError === true);
    expect(failures.map((r) => (r.args as { sn: string }).sn).sort()).toEqual([...expected.failing].sort());
    expect(String(failures[0]?.summary)).toContain('did not answer');
    const ok = records.find((r) => r.tool === 'fleet__get_device_status' && r.isError === false);
    expect(String(ok?.summary).length).toBeGreaterThan(0);

    // The same records through the read_workspace_file tool, as a client without the gateway's disk sees them.
    const read = async (file: string) =>
      client.callTool({ name: 'read_workspace_file', arguments: { path: `${detailsDir}${file}`, length: 100_000 } });
    expect(textOf(await read('script.py'))).toBe(
      `${seedScript}\n[${detailsDir}script.py: bytes 0-${Buffer.byteLength(seedScript)} of ${Buffer.byteLength(seedScript)}; end of file]`,
    );
    expect(textOf(await read('output.txt')).startsWith(expected.output)).toBe(true);
    const callsRead = await read('calls.jsonl');
    expect(textOf(callsRead).startsWith(`${lines[0]}\n${lines[1]}\n`)).toBe(true);
    expect(callsRead.structuredContent).toMatchObject({ size: Buffer.byteLength(`${lines.join('\n')}\n`) });

    // One audit record for the whole script, none per inner call.
    const audit = await auditOf(gateway, sessionId);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      kind: 'script',
      tool: 'run_script',
      status: 'ok',
      script: {
        description: 'fleet status by site',
        calls: 501,
        failures: 10,
        callsPerTool: { fleet__list_devices: 1, fleet__get_device_status: 500 },
        exitCode: 0,
        detailsDir,
        content: seedScript,
      },
    });
  });
});

describe('where run_script is offered', () => {
  it('only to profiles with a third-party tool, with a description under 3,000 characters', async () => {
    const bare = await connect(bareToken, 'modern', 'bare');
    const bareNames = (await bare.listTools()).tools.map((tool) => tool.name);
    expect(bareNames).toContain('read_workspace_file');
    expect(bareNames).not.toContain('run_script');
    const bareCall = await bare.callTool({ name: 'run_script', arguments: { code: 'print(1)', description: 'x' } });
    expect(bareCall.isError).toBe(true);
    expect(await scriptDirs(gateway, 'bare/bare')).toEqual([]);

    const ops = await connect(tokens.ops, 'modern', 'offered');
    const tool = (await ops.listTools()).tools.find((candidate) => candidate.name === 'run_script');
    expect(tool?.description?.length).toBeGreaterThan(500);
    expect(tool?.description?.length).toBeLessThan(3000);
    expect(tool?.description).toMatch(/call_many/);
    expect(tool?.inputSchema.required).toEqual(expect.arrayContaining(['code']));
  });
});

describe('permissions (seed §4)', () => {
  it('read tools run; an unlisted write, a destructive, a long-task and a disabled tool raise not_allowed', async () => {
    const client = await connect(tokens.ops, 'modern', 'rules');
    const code = `
from agent_tools import call, ToolError
print("read", call("fleet__get_device_status", {"sn": "FL-000001"})["sn"])
for tool, args in [("fleet__set_device_label", {"sn": "FL-000002", "label": "unlisted"}),
                   ("fleet__reboot_device", {"sn": "FL-000002"}),
                   ("fleet__export_fleet_report", {}),
                   ("spare__get_device_status", {"sn": "FL-000002"})]:
    try:
        call(tool, args)
        print(tool, "RAN")
    except ToolError as e:
        print(tool, "|", e.code, "|", e.message)
after = call("fleet__get_device_status", {"sn": "FL-000002"})
print("after", after["label"], after["rebooting"])
`;
    const result = await runScript(client, code);
    expect(result.isError, result.text).toBe(false);
    const printed = result.text.split('\n').slice(1);
    expect(printed[0]).toBe('read FL-000001');
    expect(printed[1]).toMatch(
      /^fleet__set_device_label \| not_allowed \| .*fleet__set_device_label is a write tool not listed in run_script's "tools"/,
    );
    expect(printed[2]).toMatch(/^fleet__reboot_device \| not_allowed \| .*destructive/);
    expect(printed[3]).toMatch(/^fleet__export_fleet_report \| not_allowed \| .*long task/);
    expect(printed[4]).toMatch(/^spare__get_device_status \| not_allowed \| .*disabled/);
    expect(printed[5]).toBe('after None False');
    expect(await approvalsOf(gateway, 'ops/rules')).toEqual([]);
  });

  it.each([
    ['fleet__reboot_device', /destructive/],
    ['fleet__export_fleet_report', /long task/],
    ['spare__get_device_status', /disabled/],
    ['fleet__no_such_tool', /not a tool of this profile/],
  ])('listing %s rejects the run before it starts, naming the tool', async (tool, reason) => {
    const session = `rejected-${tool}`;
    const client = await connect(tokens.ops, 'legacy', session);
    const result = await runScript(client, 'open("ran.txt", "w").write("ran")\nprint("ran")', [
      'fleet__set_device_label',
      tool,
    ]);
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/rejected before it started/);
    expect(result.text).toContain(tool);
    expect(result.text).toMatch(reason);
    expect(result.text).not.toContain('fleet__set_device_label');
    expect(await scriptDirs(gateway, `ops/${session}`)).toEqual([]);
    expect(existsSync(join(workspaceOf(gateway, `ops/${session}`), 'ran.txt'))).toBe(false);
    expect(await approvalsOf(gateway, `ops/${session}`)).toEqual([]);
  });

  it('auto mode: a listed write tool runs with no approval', async () => {
    const client = await connect(tokens.auto, 'modern', 'auto-write');
    const result = await runScript(client, labelScript('FL-000032', 'auto'), ['fleet__set_device_label']);
    expect(result.isError, result.text).toBe(false);
    expect(await labelOf(client, 'FL-000032')).toBe('auto');
    expect(await approvalsOf(gateway, 'auto/auto-write')).toEqual([]);
  });

  it('read-only profile: write tools unusable, the workspace readable but not writable', async () => {
    const client = await connect(tokens.readonly, 'legacy', 'ro');
    await gateway.gateway.workspaces.writeFile('readonly/ro', 'notes.txt', 'read me');
    const offered = (await client.listTools()).tools.map((tool) => tool.name);
    expect(offered).toEqual(expect.arrayContaining(['run_script', 'fleet__get_device_status']));
    expect(offered).not.toContain('fleet__set_device_label');
    const listed = await runScript(client, 'print(1)', ['fleet__set_device_label']);
    expect(listed.isError).toBe(true);
    expect(listed.text).toMatch(/rejected before it started: fleet__set_device_label .*read-only/);

    const code = `
import os
from agent_tools import call, ToolError
print("read:", open("notes.txt").read())
try:
    open("new.txt", "w").write("x")
    print("write: ok")
except OSError as e:
    print("write:", type(e).__name__, os.strerror(e.errno))
try:
    call("fleet__set_device_label", {"sn": "FL-000033", "label": "ro"})
    print("label: ok")
except ToolError as e:
    print("label:", e.code, e.message)
`;
    const result = await runScript(client, code);
    expect(result.isError, result.text).toBe(false);
    const printed = result.text.split('\n').slice(1);
    expect(printed[0]).toBe('read: read me');
    expect(printed[1]).toMatch(/^write: (PermissionError|OSError) Read-only file system$/);
    expect(printed[2]).toMatch(/^label: not_allowed .*read-only/);
    expect(existsSync(join(workspaceOf(gateway, 'readonly/ro'), 'new.txt'))).toBe(false);
    expect(await labelOf(client, 'FL-000033')).toBeNull();
  });
});

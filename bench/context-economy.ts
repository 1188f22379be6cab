import type { Client } from '@modelcontextprotocol/client';
import { connectGateway, runScriptTool, startInProcessGateway, textOf } from './gateway.js';
import type { BenchOptions } from './options.js';
import type { Section } from './report.js';
import { formatNumber } from './stats.js';

// Figure 1: the fleet task done the way a model does it without run_script (one tool call per round trip, every
// result entering its context) against one run_script whose printed summary is all that comes back.

/** The largest page whose result the gateway does not cut at `results.maxChars` (20,000). */
const PAGE_SIZE = 250;

interface DeviceStatus {
  sn: string;
  site: string;
  status: string;
  health: number;
}

interface TaskAnswer {
  bySite: Map<string, Map<string, number>>;
  worst: DeviceStatus[];
  failed: number;
}

const SCRIPT = `
from collections import Counter, defaultdict
from agent_tools import call, call_many, ToolError

devices = call("fleet__list_devices", {"pageSize": 500})["devices"]
rows = call_many("fleet__get_device_status", [{"sn": d["sn"]} for d in devices], return_errors=True)
by_site = defaultdict(Counter)
answered = [row for row in rows if not isinstance(row, ToolError)]
failed = [d["sn"] for d, row in zip(devices, rows) if isinstance(row, ToolError)]
for row in answered:
    by_site[row["site"]][row["status"]] += 1
print("online/degraded/offline by site:")
print(", ".join(f"{site} " + "/".join(str(by_site[site][s]) for s in ("online", "degraded", "offline")) for site in sorted(by_site)))
worst = sorted(answered, key=lambda row: (row["health"], row["sn"]))[:10]
print("10 worst health: " + ", ".join(f"{row['sn']} {row['health']}" for row in worst))
print(f"{len(devices)} devices, {len(failed)} did not answer")
`;

function summaryLines(answer: TaskAnswer): string[] {
  return [...answer.bySite.keys()].sort().map((site) => {
    const counts = answer.bySite.get(site)!;
    return `${site} ${['online', 'degraded', 'offline'].map((status) => String(counts.get(status) ?? 0)).join('/')}`;
  });
}

function parseJson(result: { content?: unknown; structuredContent?: unknown }): Record<string, unknown> {
  if (result.structuredContent !== undefined) return result.structuredContent as Record<string, unknown>;
  return JSON.parse(textOf(result)) as Record<string, unknown>;
}

/** A: list every device page by page, then ask each device's status, one call per round trip. */
async function oneByOne(client: Client): Promise<{ roundTrips: number; bytes: number; answer: TaskAnswer }> {
  let roundTrips = 0;
  let bytes = 0;
  const sns: string[] = [];
  let cursor: string | undefined;
  do {
    const result = await client.callTool({
      name: 'fleet__list_devices',
      arguments: { pageSize: PAGE_SIZE, ...(cursor === undefined ? {} : { cursor }) },
    });
    roundTrips += 1;
    bytes += Buffer.byteLength(textOf(result));
    const page = parseJson(result) as { devices: { sn: string }[]; nextCursor?: string };
    sns.push(...page.devices.map((device) => device.sn));
    cursor = page.nextCursor;
  } while (cursor !== undefined);

  const answer: TaskAnswer = { bySite: new Map(), worst: [], failed: 0 };
  const answered: DeviceStatus[] = [];
  for (const sn of sns) {
    const result = await client.callTool({ name: 'fleet__get_device_status', arguments: { sn } });
    roundTrips += 1;
    bytes += Buffer.byteLength(textOf(result));
    if (result.isError === true) {
      answer.failed += 1;
      continue;
    }
    const status = parseJson(result) as unknown as DeviceStatus;
    answered.push(status);
    const counts = answer.bySite.get(status.site) ?? new Map<string, number>();
    counts.set(status.status, (counts.get(status.status) ?? 0) + 1);
    answer.bySite.set(status.site, counts);
  }
  answer.worst = answered.sort((a, b) => a.health - b.health || a.sn.localeCompare(b.sn)).slice(0, 10);
  if (sns.length !== 500) throw new Error(`listing found ${sns.length} devices, expected 500`);
  return { roundTrips, bytes, answer };
}

export async function measureContextEconomy(options: BenchOptions): Promise<Section> {
  // Bytes and round trips do not depend on latency; the quick run fixes it at 0 ms to save ~15 s.
  const latencyNote = options.quick ? 'latency fixed at 0 ms (quick run)' : 'the demo’s own latency (5–50 ms)';
  const gateway = await startInProcessGateway(options.quick ? { latencyMs: 0 } : {});
  try {
    const direct = await connectGateway(gateway, 'economy-one-by-one');
    const scripted = await connectGateway(gateway, 'economy-script');
    const startedA = performance.now();
    const a = await oneByOne(direct);
    const secondsA = (performance.now() - startedA) / 1000;
    const startedB = performance.now();
    const b = await runScriptTool(scripted, SCRIPT, 'fleet status by site, 10 worst');
    const secondsB = (performance.now() - startedB) / 1000;
    await Promise.all([direct.close(), scripted.close()]);

    const bytesB = Buffer.byteLength(b.text);
    const summaryLineBytes = Buffer.byteLength(b.text.split('\n')[0] ?? '');
    const reduction = 1 - bytesB / a.bytes;
    const sameCounts = summaryLines(a.answer).every((line) => b.output.includes(line));
    const worstA = a.answer.worst.map((row) => `${row.sn} ${row.health}`);
    const sameWorst = worstA.every((entry) => b.output.includes(entry));
    return {
      name: 'economy',
      title: '1. Context economy: status of all 500 devices, summarised by site',
      rows: [
        {
          figure: 'model round trips',
          toolgate: '1 (run_script)',
          baseline: `${a.roundTrips} (${a.roundTrips - 500} list pages + 500 status calls)`,
          ratio: `1/${a.roundTrips}`,
          goal: '1 instead of 501',
          met: a.roundTrips >= 501,
        },
        {
          figure: 'bytes of tool output entering the context',
          toolgate: `${formatNumber(bytesB)} B`,
          baseline: `${formatNumber(a.bytes)} B`,
          ratio: `${(reduction * 100).toFixed(2)}% fewer`,
          goal: '≥ 99.5% fewer',
          met: reduction >= 0.995,
        },
        {
          figure: 'of which toolgate’s own summary line / what the script printed',
          toolgate: `${formatNumber(summaryLineBytes)} B / ${formatNumber(bytesB - summaryLineBytes)} B`,
          baseline: `0.5% of the baseline is ${formatNumber(a.bytes * 0.005)} B`,
          ratio: '',
          goal: '',
        },
        {
          figure: 'tool wall time (no model time counted)',
          toolgate: `${secondsB.toFixed(1)} s`,
          baseline: `${secondsA.toFixed(1)} s`,
          ratio: `${(secondsA / secondsB).toFixed(1)}× faster`,
          goal: '',
        },
        {
          figure: 'same answer (counts per site and status, 10 worst)',
          toolgate: b.isError ? `failed: ${b.text.slice(0, 80)}` : `${b.calls} calls (${b.failures} failed)`,
          baseline: `${a.answer.failed} calls failed`,
          ratio: sameCounts && sameWorst ? 'identical' : '**differs**',
          goal: '',
        },
      ],
      notes: [
        `Baseline: an SDK client calling \`fleet__list_devices\` (pages of ${PAGE_SIZE}, the largest the gateway does not cut at 20,000 characters) and \`fleet__get_device_status\` 500 times through toolgate, one call at a time as a model would; bytes are the UTF-8 text content of every result.`,
        'toolgate: one `run_script` (list, `call_many`, summarise in Python); bytes are the whole reply text, summary line included.',
        `The fleet is the demo with its 10 unanswering devices and ${latencyNote}.`,
      ],
    };
  } finally {
    await gateway.close();
  }
}

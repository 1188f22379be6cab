import type { Client } from '@modelcontextprotocol/client';
import {
  callDurationsOf,
  connectFleetDirectly,
  connectGateway,
  lastNumberOf,
  runScriptTool,
  startInProcessGateway,
  type BenchGateway,
  type FleetEnv,
} from './gateway.js';
import { sized, type BenchOptions } from './options.js';
import type { Section } from './report.js';
import { formatNumber, formatRatio, summarize, type Summary } from './stats.js';

// Figure 3: calls/s of a script's `call` loop and of `call_many` against an SDK client calling the fleet
// service directly over stdio, with no latency and no simulated errors, so only the call path is measured.

const FLEET: FleetEnv = { latencyMs: 0, noErrors: true };
const SESSION = 'call-overhead';

const serialNumber = (index: number): string => `FL-${String((index % 500) + 1).padStart(6, '0')}`;

/** The script times itself: the figure is the call path, not the sandbox start (figure 2). */
function sequentialScript(calls: number): string {
  return `
import time
from agent_tools import call
started = time.perf_counter()
for index in range(${calls}):
    call("fleet__get_device_status", {"sn": "FL-%06d" % (index % 500 + 1)})
print(time.perf_counter() - started)
`;
}

/** A script timing `calls` get_device_status calls made with one call_many (shared with the latency bench). */
export function callManyScript(calls: number): string {
  return `
import time
from agent_tools import call_many
args = [{"sn": "FL-%06d" % (index % 500 + 1)} for index in range(${calls})]
started = time.perf_counter()
call_many("fleet__get_device_status", args)
print(time.perf_counter() - started)
`;
}

async function directSequential(client: Client, calls: number): Promise<number> {
  const started = performance.now();
  for (let index = 0; index < calls; index++) {
    const result = await client.callTool({ name: 'get_device_status', arguments: { sn: serialNumber(index) } });
    if (result.isError === true) throw new Error(`direct call failed: ${JSON.stringify(result.content)}`);
  }
  return (performance.now() - started) / 1000;
}

interface Timed {
  /** Mean gateway-side duration of a call (calls.jsonl, whole ms): pipeline + service round trip. */
  gatewayMs: number;
  /** Seconds measured inside the script (the call path only). */
  inside: number;
  /** Seconds from the client's request to the reply (adds the sandbox start). */
  endToEnd: number;
}

async function scripted(gateway: BenchGateway, client: Client, code: string, calls: number): Promise<Timed> {
  const started = performance.now();
  const reply = await runScriptTool(client, code);
  const endToEnd = (performance.now() - started) / 1000;
  if (reply.isError || reply.calls !== calls || reply.failures !== 0)
    throw new Error(`script failed: ${reply.text.slice(0, 500)}`);
  const durations = await callDurationsOf(gateway, SESSION, reply);
  const gatewayMs = durations.reduce((sum, value) => sum + value, 0) / durations.length;
  return { inside: lastNumberOf(reply), endToEnd, gatewayMs };
}

const rate = (calls: number, seconds: number): number => calls / seconds;

function callsPerSecond(summary: Summary): string {
  return `${formatNumber(summary.median)}/s (${formatNumber(summary.min)}–${formatNumber(summary.max)})`;
}

export async function measureCallOverhead(options: BenchOptions): Promise<Section> {
  const calls = sized(options, 200, 2000);
  const reps = sized(options, 3, 3);
  const gateway = await startInProcessGateway(FLEET);
  const direct = await connectFleetDirectly(FLEET);
  try {
    const client = await connectGateway(gateway, SESSION);
    // Warm-up: JIT, connections, the first sandbox.
    await directSequential(direct, 100);
    await scripted(gateway, client, sequentialScript(100), 100);
    const directRates: number[] = [];
    const sequentialRates: number[] = [];
    const sequentialEndToEnd: number[] = [];
    const manyRates: number[] = [];
    const manyEndToEnd: number[] = [];
    const gatewaySideMs: number[] = [];
    for (let rep = 0; rep < reps; rep++) {
      directRates.push(rate(calls, await directSequential(direct, calls)));
      const sequential = await scripted(gateway, client, sequentialScript(calls), calls);
      sequentialRates.push(rate(calls, sequential.inside));
      sequentialEndToEnd.push(rate(calls, sequential.endToEnd));
      gatewaySideMs.push(sequential.gatewayMs);
      const many = await scripted(gateway, client, callManyScript(calls), calls);
      manyRates.push(rate(calls, many.inside));
      manyEndToEnd.push(rate(calls, many.endToEnd));
    }
    await client.close();
    const baseline = summarize(directRates);
    const sequential = summarize(sequentialRates);
    const many = summarize(manyRates);
    const sequentialRatio = sequential.median / baseline.median;
    const manyRatio = many.median / baseline.median;
    const gatewayUs = summarize(gatewaySideMs).median * 1000;
    const perCallUs = (1 / sequential.median - 1 / baseline.median) * 1e6;
    return {
      name: 'overhead',
      title: `3. Per-call overhead: ${formatNumber(calls)} calls of get_device_status (0 ms latency)`,
      rows: [
        {
          figure: 'script, sequential `call`',
          toolgate: callsPerSecond(sequential),
          baseline: `direct client ${callsPerSecond(baseline)}`,
          ratio: formatRatio(sequentialRatio),
          goal: '≥ 0.8×',
          met: sequentialRatio >= 0.8,
        },
        {
          figure: 'script, `call_many` (concurrency 4)',
          toolgate: callsPerSecond(many),
          baseline: `direct client ${callsPerSecond(baseline)}`,
          ratio: formatRatio(manyRatio),
          goal: '≥ 1.5×',
          met: manyRatio >= 1.5,
        },
        {
          figure: 'added time per sequential call',
          toolgate: `${formatNumber(perCallUs)} µs`,
          baseline: `${formatNumber(1e6 / baseline.median)} µs per direct call`,
          ratio: '',
          goal: '',
        },
        {
          figure: 'a sequential call, split: gateway side (calls.jsonl) / bridge + Python',
          toolgate: `${formatNumber(gatewayUs)} µs / ${formatNumber(1e6 / sequential.median - gatewayUs)} µs`,
          baseline: `${formatNumber(1e6 / baseline.median)} µs per direct call`,
          ratio: '',
          goal: '',
        },
        {
          figure: 'end to end incl. sandbox start (sequential / call_many)',
          toolgate: `${formatNumber(summarize(sequentialEndToEnd).median)}/s / ${formatNumber(summarize(manyEndToEnd).median)}/s`,
          baseline: '',
          ratio: '',
          goal: '',
        },
      ],
      notes: [
        `${reps} repetitions, interleaved (direct, script sequential, script call_many), after a warm-up; calls/s are median (min–max).`,
        'Baseline: an SDK client connected over stdio straight to the fleet service (not through toolgate), one call after another. The script figures are timed inside the script, so the sandbox start (figure 2) is not in them.',
        'Fleet with FLEET_FIXED_LATENCY_MS=0 and FLEET_NO_ERRORS=1 on both sides.',
      ],
    };
  } finally {
    await direct.close();
    await gateway.close();
  }
}

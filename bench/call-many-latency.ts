import type { Client } from '@modelcontextprotocol/client';
import {
  callDurationsOf,
  connectFleetDirectly,
  connectGateway,
  lastNumberOf,
  runScriptTool,
  startInProcessGateway,
  type FleetEnv,
} from './gateway.js';
import { sized, type BenchOptions } from './options.js';
import type { Section } from './report.js';
import { formatNumber, formatRatio, summarize } from './stats.js';
import { callManyScript } from './call-overhead.js';

// Figure 4: call_many over a tool that takes 20 ms, against the ideal calls × 20 ms / concurrency; an SDK client
// running 4 calls at a time straight at the service shows what the service itself allows.

const LATENCY_MS = 20;
const CONCURRENCY = 4;
/** agent_tools.BATCH_SIZE. */
const BATCH_SIZE = 50;
const FLEET: FleetEnv = { latencyMs: LATENCY_MS, noErrors: true };

/** CONCURRENCY workers taking the next index until none is left: the same shape as the gateway's gate. */
async function directConcurrent(client: Client, calls: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < calls) {
      const index = next++;
      const sn = `FL-${String((index % 500) + 1).padStart(6, '0')}`;
      const result = await client.callTool({ name: 'get_device_status', arguments: { sn } });
      if (result.isError === true) throw new Error(`direct call failed for ${sn}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return performance.now() - started;
}

export async function measureCallManyLatency(options: BenchOptions): Promise<Section> {
  const calls = sized(options, 200, 500);
  const reps = sized(options, 2, 5);
  const idealMs = (calls * LATENCY_MS) / CONCURRENCY;
  const gateway = await startInProcessGateway(FLEET);
  const direct = await connectFleetDirectly(FLEET);
  try {
    const session = 'call-many-latency';
    const client = await connectGateway(gateway, session);
    await directConcurrent(direct, 40);
    const scriptMs: number[] = [];
    const directMs: number[] = [];
    const gatewaySide: number[] = [];
    for (let rep = 0; rep < reps; rep++) {
      const reply = await runScriptTool(client, callManyScript(calls));
      if (reply.isError || reply.calls !== calls || reply.failures !== 0)
        throw new Error(`script failed: ${reply.text.slice(0, 500)}`);
      scriptMs.push(lastNumberOf(reply) * 1000);
      gatewaySide.push(...(await callDurationsOf(gateway, session, reply)));
      directMs.push(await directConcurrent(direct, calls));
    }
    await client.close();
    const script = summarize(scriptMs);
    const service = summarize(directMs);
    const ratio = script.median / idealMs;
    const perCall = summarize(gatewaySide);
    // call_many waits for a whole batch of 50 before sending the next: ceil(50 / 4) rounds per batch, not 12.5.
    const batches = Math.ceil(calls / BATCH_SIZE);
    const batchedIdealMs = batches * Math.ceil(BATCH_SIZE / CONCURRENCY) * LATENCY_MS;
    const floorMs = batches * Math.ceil(BATCH_SIZE / CONCURRENCY) * perCall.mean;
    const spread = (values: typeof script): string =>
      `${formatNumber(values.median)} ms (${formatNumber(values.min)}–${formatNumber(values.max)})`;
    return {
      name: 'latency',
      title: `4. call_many on a latency-bound tool: ${calls} calls × ${LATENCY_MS} ms, concurrency ${CONCURRENCY}`,
      rows: [
        {
          figure: 'call_many vs the ideal',
          toolgate: spread(script),
          baseline: `ideal ${formatNumber(idealMs)} ms`,
          ratio: formatRatio(ratio),
          goal: '≤ 1.10×',
          met: ratio <= 1.1,
        },
        {
          figure: `direct client, ${CONCURRENCY} at a time (what the service allows)`,
          toolgate: '',
          baseline: spread(service),
          ratio: formatRatio(service.median / idealMs),
          goal: '',
        },
        {
          figure: `ideal with call_many's batch barrier (${batches} batches of ${BATCH_SIZE}, ${Math.ceil(BATCH_SIZE / CONCURRENCY)} rounds each)`,
          toolgate: '',
          baseline: `${formatNumber(batchedIdealMs)} ms`,
          ratio: formatRatio(batchedIdealMs / idealMs),
          goal: '',
        },
        {
          figure: 'gateway-side duration of one call (calls.jsonl: pipeline + service)',
          toolgate: `mean ${formatNumber(perCall.mean)} ms, p50 ${formatNumber(perCall.p50)}, p99 ${formatNumber(perCall.p99)}`,
          baseline: `${LATENCY_MS} ms`,
          ratio: formatRatio(perCall.mean / LATENCY_MS),
          goal: '',
        },
        {
          figure: 'floor from those durations and the batch barrier',
          toolgate: `${formatNumber(floorMs)} ms`,
          baseline: `ideal ${formatNumber(idealMs)} ms`,
          ratio: formatRatio(floorMs / idealMs),
          goal: '',
        },
        {
          figure: 'call_many vs the direct client at the same concurrency',
          toolgate: spread(script),
          baseline: spread(service),
          ratio: formatRatio(script.median / service.median),
          goal: '',
        },
      ],
      notes: [
        `${reps} repetitions, interleaved; call_many is timed inside the script (sandbox start excluded).`,
        `Fleet with FLEET_FIXED_LATENCY_MS=${LATENCY_MS} and FLEET_NO_ERRORS=1; a Node timer of 20 ms fires after ≥ 20 ms, so even the direct client cannot reach the ideal exactly.`,
      ],
    };
  } finally {
    await direct.close();
    await gateway.close();
  }
}

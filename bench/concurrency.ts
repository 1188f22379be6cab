import type { Client } from '@modelcontextprotocol/client';
import {
  connectGateway,
  runScriptTool,
  sleep,
  startChildGateway,
  type BenchGateway,
  type ScriptReply,
} from './gateway.js';
import { generateFleet } from '../src/demo/fleet-data.js';
import { sized, type BenchOptions } from './options.js';
import type { Section } from './report.js';
import { formatNumber, summarize, type Summary } from './stats.js';

// Figure 6: many sessions each running a script of sequential calls at once, while /health is sampled. The
// gateway is a child process so that the clients' work does not share the event loop /health measures.

const CALLS = 200;
const HEALTH_EVERY_MS = 50;

const SCRIPT = `
from agent_tools import call
for index in range(${CALLS}):
    call("fleet__get_device_status", {"sn": "FL-%06d" % (index % 500 + 1)})
print("done")
`;

async function healthOnce(gateway: BenchGateway): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${gateway.url}/health`);
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`/health answered ${response.status}`);
  return performance.now() - started;
}

/** Samples /health one request at a time until `until` settles. */
async function sampleHealth(gateway: BenchGateway, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true)).catch(() => undefined);
  const samples: number[] = [];
  while (!done) {
    samples.push(await healthOnce(gateway));
    await sleep(HEALTH_EVERY_MS);
  }
  return samples;
}

/** The summed simulated latency of the devices the script asks, in order: the floor of a script's duration. */
function toolSeconds(): number {
  return generateFleet()
    .slice(0, CALLS)
    .reduce((sum, device) => sum + device.latencyMs / 1000, 0);
}

function latency(summary: Summary): string {
  return `p50 ${formatNumber(summary.p50)} ms, p99 ${formatNumber(summary.p99)} ms (max ${formatNumber(summary.max)})`;
}

export async function measureConcurrency(options: BenchOptions): Promise<Section> {
  const sessions = sized(options, 10, 50);
  // The demo's own latency (5–50 ms a call), without its simulated failures so every script must report 0 failed.
  const gateway = await startChildGateway({ noErrors: true });
  try {
    const idle = summarize(await sampleHealth(gateway, sleep(sized(options, 1000, 3000))));
    const clients: Client[] = await Promise.all(
      Array.from({ length: sessions }, (_, index) => connectGateway(gateway, `concurrency-${index}`)),
    );
    const started = performance.now();
    const durations: number[] = [];
    const run = Promise.all(
      clients.map(async (client) => {
        const began = performance.now();
        const reply = await runScriptTool(client, SCRIPT).catch((error: unknown) =>
          error instanceof Error ? error : new Error(String(error)),
        );
        durations.push(performance.now() - began);
        return reply;
      }),
    );
    const during = summarize(await sampleHealth(gateway, run));
    const replies = await run;
    const wallSeconds = (performance.now() - started) / 1000;
    await Promise.all(clients.map((client) => client.close()));
    const isCorrect = (reply: ScriptReply | Error): boolean =>
      !(reply instanceof Error) && !reply.isError && reply.calls === CALLS && reply.failures === 0;
    const correct = replies.filter(isCorrect).length;
    const scripts = summarize(durations.map((ms) => ms / 1000));
    const firstProblem = replies.find((reply) => !isCorrect(reply));
    return {
      name: 'concurrency',
      title: `6. Concurrency: ${sessions} sessions each running a ${CALLS}-call script at once`,
      rows: [
        {
          figure: 'scripts complete with 200 calls, 0 failed',
          toolgate: `${correct} of ${sessions}`,
          baseline: '',
          ratio: '',
          goal: 'all',
          met: correct === sessions,
        },
        {
          figure: 'GET /health during the run',
          toolgate: latency(during),
          baseline: `idle: ${latency(idle)}`,
          ratio: `p99 ${(during.p99 / idle.p99).toFixed(1)}× idle`,
          goal: 'p99 < 100 ms',
          met: during.p99 < 100,
        },
        {
          figure: 'script duration, end to end',
          toolgate: `p50 ${formatNumber(scripts.p50)} s, max ${formatNumber(scripts.max)} s`,
          baseline: `${formatNumber(toolSeconds())} s of tool latency per script`,
          ratio: '',
          goal: '',
        },
        {
          figure: 'all scripts, wall time / throughput',
          toolgate: `${wallSeconds.toFixed(1)} s, ${formatNumber((correct * CALLS) / wallSeconds)} calls/s`,
          baseline: '',
          ratio: '',
          goal: '',
        },
      ],
      notes: [
        `/health sampled one request at a time every ${HEALTH_EVERY_MS} ms (${during.count} samples during the run, ${idle.count} idle before it), from the bench process; the gateway is a \`toolgate serve\` child.`,
        'Each session has its own `X-Toolgate-Session`; scripts call get_device_status one after another with the demo’s own latency (5–50 ms, mean ≈ 27.5 ms) and FLEET_NO_ERRORS=1.',
        ...(firstProblem === undefined
          ? []
          : [
              `First problem: ${firstProblem instanceof Error ? firstProblem.message : firstProblem.text.slice(0, 200)}`,
            ]),
      ],
    };
  } finally {
    await gateway.close();
  }
}

import type { Client } from '@modelcontextprotocol/client';
import { connectGateway, residentMb, runScriptTool, sleep, startChildGateway, type BenchGateway } from './gateway.js';
import { sized, type BenchOptions } from './options.js';
import type { Section } from './report.js';
import { formatNumber } from './stats.js';

// Figure 5: resident memory of a `toolgate serve` child process before, during (sampled) and after 4 scripts
// printing a lot at once, then 4 scripts making many calls at once.

const SAMPLE_MS = 100;

function printScript(mb: number): string {
  return `
import sys
chunk = ("x" * 1023 + "\\n") * 64
for _ in range(${mb} * 16):
    sys.stdout.write(chunk)
`;
}

function callScript(calls: number): string {
  return `
from agent_tools import call_many
call_many("fleet__get_device_status", [{"sn": "FL-%06d" % (i % 500 + 1)} for i in range(${calls})])
print("done")
`;
}

/** Samples the gateway's RSS until `work` settles; returns the peak. */
async function peakDuring(gateway: BenchGateway, work: Promise<unknown>): Promise<number> {
  let done = false;
  const finished = work.finally(() => (done = true));
  let peak = 0;
  while (!done) {
    peak = Math.max(peak, await residentMb(gateway.pid));
    await Promise.race([finished.catch(() => undefined), sleep(SAMPLE_MS)]);
  }
  await finished;
  return Math.max(peak, await residentMb(gateway.pid));
}

/** The median of a few samples a short while apart: one reading can land in a GC pause. */
async function steadyMb(gateway: BenchGateway): Promise<number> {
  const samples: number[] = [];
  for (let index = 0; index < 5; index++) {
    samples.push(await residentMb(gateway.pid));
    await sleep(200);
  }
  return samples.sort((a, b) => a - b)[2]!;
}

async function runAll(clients: Client[], code: string, calls: number): Promise<void> {
  const replies = await Promise.all(clients.map((client) => runScriptTool(client, code)));
  for (const reply of replies) {
    if (reply.isError || reply.calls !== calls) throw new Error(`script failed: ${reply.text.slice(0, 300)}`);
  }
}

export async function measureGatewayMemory(options: BenchOptions): Promise<Section> {
  const printMb = sized(options, 50, 200);
  const calls = sized(options, 200, 2000);
  const settleMs = sized(options, 3000, 8000);
  const gateway = await startChildGateway({ latencyMs: 0, noErrors: true });
  try {
    const started = await residentMb(gateway.pid);
    const clients = await Promise.all([0, 1, 2, 3].map((index) => connectGateway(gateway, `memory-${index}`)));
    // Warm-up so that lazily loaded code and the first sandbox are not counted as growth.
    await runAll(clients, callScript(20), 20);
    await sleep(1000);
    const before = await steadyMb(gateway);
    const printing = await peakDuring(gateway, runAll(clients, printScript(printMb), 0));
    await sleep(1000);
    const calling = await peakDuring(gateway, runAll(clients, callScript(calls), calls));
    await sleep(settleMs);
    const after = await steadyMb(gateway);
    // A second round tells a leak (grows again) from heap V8 keeps for reuse (stays flat).
    const again = await peakDuring(gateway, runAll(clients, callScript(calls), calls));
    await Promise.all(clients.map((client) => client.close()));
    await sleep(settleMs);
    const afterAgain = await steadyMb(gateway);
    const growth = Math.max(printing, calling) - before;
    const mb = (value: number): string => `${formatNumber(value)} MB`;
    return {
      name: 'memory',
      title: '5. Gateway memory (RSS of a `toolgate serve` child process)',
      rows: [
        {
          figure: `peak during 4 × print ${printMb} MB`,
          toolgate: mb(printing),
          baseline: `before ${mb(before)}`,
          ratio: `+${mb(printing - before)}`,
          goal: '≤ +50 MB',
          met: printing - before <= 50,
        },
        {
          figure: `peak during 4 × ${formatNumber(calls)} calls (call_many)`,
          toolgate: mb(calling),
          baseline: `before ${mb(before)}`,
          ratio: `+${mb(calling - before)}`,
          goal: '≤ +50 MB',
          met: calling - before <= 50,
        },
        {
          figure: `after, ${settleMs / 1000} s settle`,
          toolgate: mb(after),
          baseline: `before ${mb(before)}`,
          ratio: `${after >= before ? '+' : ''}${mb(after - before)}`,
          goal: 'back to baseline',
          met: after - before <= 10,
        },
        {
          figure: `second round of 4 × ${formatNumber(calls)} calls: peak / after ${settleMs / 1000} s`,
          toolgate: `${mb(again)} / ${mb(afterAgain)}`,
          baseline: `after the first ${mb(after)}`,
          ratio: `${afterAgain >= after ? '+' : ''}${mb(afterAgain - after)}`,
          goal: '',
        },
        { figure: 'just after start (for reference)', toolgate: mb(started), baseline: '', ratio: '', goal: '' },
      ],
      notes: [
        `VmRSS from /proc/<pid>/status every ${SAMPLE_MS} ms; "before" is after a warm-up round of 4 small scripts; 4 sessions, one script each per phase, the phases one after the other; peak growth ${mb(growth)}.`,
        '"Back to baseline" is read as within 10 MB; no GC is forced (the child has no `global.gc`), so V8 may keep freed heap for a while.',
      ],
    };
  } catch (error) {
    throw new Error(`${String(error)} (gateway ${gateway.diagnostics?.() ?? ''})`, { cause: error });
  } finally {
    await gateway.close();
  }
}

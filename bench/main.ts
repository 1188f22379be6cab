import { parseArgs } from 'node:util';
import { packageRoot } from '../src/config/default-config.js';
import { measureCallManyLatency } from './call-many-latency.js';
import { measureCallOverhead } from './call-overhead.js';
import { measureConcurrency } from './concurrency.js';
import { measureContextEconomy } from './context-economy.js';
import { measureGatewayMemory } from './gateway-memory.js';
import { describeMachine } from './machine.js';
import type { BenchOptions } from './options.js';
import { formatReport, formatSection, updateReadme, writeResults, type RunInfo, type Section } from './report.js';
import { measureSandboxStart } from './sandbox-start.js';

// `npm run bench [-- --quick] [-- --only NAME]`: measures, prints the table, writes bench/results/ and, after a
// full run of everything, the README's Benchmarks section. Progress goes to stderr, the report to stdout.

interface Measurement {
  name: string;
  run(options: BenchOptions): Promise<Section>;
}

const MEASUREMENTS: readonly Measurement[] = [
  { name: 'economy', run: measureContextEconomy },
  { name: 'start', run: measureSandboxStart },
  { name: 'overhead', run: measureCallOverhead },
  { name: 'latency', run: measureCallManyLatency },
  { name: 'memory', run: measureGatewayMemory },
  { name: 'concurrency', run: measureConcurrency },
];

const USAGE = `usage: npm run bench [-- --quick] [-- --only ${MEASUREMENTS.map((m) => m.name).join('|')}]`;

function failedSection(name: string, error: unknown): Section {
  const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
  return {
    name,
    title: `${name}: the measurement failed`,
    rows: [],
    notes: [`\`${message.split('\n').slice(0, 4).join(' ← ')}\``],
  };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { quick: { type: 'boolean', default: false }, only: { type: 'string' }, help: { type: 'boolean' } },
  });
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const selected = MEASUREMENTS.filter((m) => values.only === undefined || m.name === values.only);
  if (selected.length === 0) {
    process.stderr.write(`unknown measurement "${values.only}"\n${USAGE}\n`);
    return 2;
  }
  const options: BenchOptions = { quick: values.quick };
  const startedAt = new Date();
  const machine = await describeMachine();
  const sections: Section[] = [];
  for (const measurement of selected) {
    const began = performance.now();
    process.stderr.write(`bench: ${measurement.name}…\n`);
    const section = await measurement.run(options).catch((error: unknown) => failedSection(measurement.name, error));
    sections.push(section);
    process.stderr.write(`${formatSection(section)}\n(${((performance.now() - began) / 1000).toFixed(1)} s)\n\n`);
  }
  const run: RunInfo = {
    quick: options.quick,
    only: values.only,
    startedAt,
    durationMs: Date.now() - startedAt.getTime(),
    machine,
  };
  const report = formatReport(run, sections);
  process.stdout.write(report);
  const root = packageRoot();
  const path = await writeResults(root, run, report);
  process.stderr.write(`bench: wrote ${path} and bench/results/latest.md\n`);
  if (!options.quick && values.only === undefined) {
    await updateReadme(root, report);
    process.stderr.write('bench: updated the Benchmarks section of README.md\n');
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);

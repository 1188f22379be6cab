import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { MachineDetails } from './machine.js';

/** One line of a measurement's table: toolgate's figure beside its baseline from the same run. */
export interface Row {
  figure: string;
  toolgate: string;
  baseline: string;
  ratio: string;
  goal: string;
  /** Whether the goal is met; undefined where a row has no goal. Informative only: benchmarks assert nothing. */
  met?: boolean;
}

export interface Section {
  name: string;
  title: string;
  rows: Row[];
  /** How it was measured and what the figures mean, one sentence each. */
  notes: string[];
}

export interface RunInfo {
  quick: boolean;
  only: string | undefined;
  startedAt: Date;
  durationMs: number;
  machine: MachineDetails;
}

function cell(value: string): string {
  return value.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

function metMark(met: boolean | undefined): string {
  if (met === undefined) return '';
  return met ? 'yes' : '**no**';
}

export function formatSection(section: Section): string {
  const lines = [
    `### ${section.title}`,
    '',
    '| figure | toolgate | baseline | ratio | goal | met |',
    '|---|---|---|---|---|---|',
    ...section.rows.map(
      (row) =>
        `| ${[row.figure, row.toolgate, row.baseline, row.ratio, row.goal, metMark(row.met)].map(cell).join(' | ')} |`,
    ),
  ];
  if (section.notes.length > 0) lines.push('', ...section.notes.map((note) => `- ${note}`));
  return lines.join('\n');
}

export function formatMachine(run: RunInfo): string {
  const { machine } = run;
  const mode = run.quick ? 'quick (`npm run bench -- --quick`)' : 'full (`npm run bench`)';
  return [
    `Run ${run.startedAt.toISOString()}, ${mode}${run.only === undefined ? '' : `, only ${run.only}`}, took ${(run.durationMs / 1000).toFixed(0)} s.`,
    `Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGb.toFixed(1)} GB RAM, ${machine.os};`,
    `Node ${machine.node}, Python ${machine.python}, ${machine.bwrap}.`,
    'Times are median (min–max) over the repetitions; ratios are of medians taken in the same run.',
  ].join('\n');
}

export function formatReport(run: RunInfo, sections: readonly Section[]): string {
  return [formatMachine(run), ...sections.map(formatSection)].join('\n\n') + '\n';
}

function resultsName(run: RunInfo): string {
  const stamp = run.startedAt
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replaceAll(':', '-');
  const only = run.only === undefined ? '' : `-${run.only}`;
  return `${stamp}-${run.quick ? 'quick' : 'full'}${only}.md`;
}

/** Writes `bench/results/<date>-<quick|full>.md` and `bench/results/latest.md`; returns the dated path. */
export async function writeResults(root: string, run: RunInfo, report: string): Promise<string> {
  const dir = join(root, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  const path = join(dir, resultsName(run));
  const document = `# toolgate benchmarks\n\n${report}`;
  await writeFile(path, document);
  await writeFile(join(dir, 'latest.md'), document);
  return path;
}

const HEADING = '## Benchmarks';

/** The README with its "## Benchmarks" section replaced by (or appended as) `body`; other sections untouched. */
export function replaceReadmeSection(readme: string, body: string): string {
  const section = `${HEADING}\n\n${body.trimEnd()}\n`;
  const lines = readme.split('\n');
  const start = lines.findIndex((line) => line.trimEnd() === HEADING);
  if (start === -1) return `${readme.trimEnd()}\n\n${section}`;
  const next = lines.findIndex((line, index) => index > start && /^## /.test(line));
  const before = lines.slice(0, start).join('\n');
  const after = next === -1 ? '' : `\n${lines.slice(next).join('\n')}`;
  return `${before}${before === '' ? '' : '\n'}${section}${after}`;
}

export async function updateReadme(root: string, report: string): Promise<void> {
  const path = join(root, 'README.md');
  const readme = await readFile(path, 'utf8');
  const body = [
    'Measured by `npm run bench` (`-- --quick` for a run under two minutes, `-- --only NAME` for one figure) against',
    'a real gateway with the demo fleet; each figure beside its baseline from the same run. Every run is kept in',
    '`bench/results/`; this is the latest full run. Benchmarks assert nothing.',
    '',
    report.replaceAll(/^### /gm, '#### '),
  ].join('\n');
  await writeFile(path, replaceReadmeSection(readme, body));
}

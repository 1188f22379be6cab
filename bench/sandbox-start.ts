import { findBwrap } from '../src/sandbox/run-sandboxed.js';
import { listUidProcesses } from '../src/sandbox/uid-processes.js';
import { runScript } from '../src/script/script-runner.js';
import { connectGateway, runScriptTool, startInProcessGateway, textOf } from './gateway.js';
import { sized, type BenchOptions } from './options.js';
import type { Row, Section } from './report.js';
import { formatNumber, formatRatio, summarize, type Summary } from './stats.js';
import {
  bootstrapAlone,
  bwrapOnlyArgv,
  createFixture,
  GATEWAY_FLAGS,
  LIMITS,
  mkfifoOnce,
  sandboxed,
  spawnAndWait,
} from './start-stages.js';

// Figure 2: run_script(print(1)) end to end through MCP against a bare `python -c 'print(1)'`, interleaved so
// noise hits both, then the same start-up taken apart stage by stage to show where the time goes.

interface Stage {
  key: string;
  label: string;
  run(): Promise<void>;
}

async function timeStage(stage: Stage): Promise<number> {
  const started = performance.now();
  await stage.run();
  return performance.now() - started;
}

export async function measureSandboxStart(options: BenchOptions): Promise<Section> {
  const reps = sized(options, 5, 30);
  const fixture = await createFixture();
  const gateway = await startInProcessGateway({ latencyMs: 0, noErrors: true });
  try {
    const client = await connectGateway(gateway, 'sandbox-start');
    const first = await runScriptTool(client, 'open("small.txt", "w").write("hello\\n")\nprint(1)');
    if (first.isError) throw new Error(`run_script failed: ${first.text}`);
    const { python } = fixture;
    const exe = python.executable;
    const bwrap = await findBwrap();
    let scriptId = 0;
    const stages: Stage[] = [
      {
        key: 'e2e',
        label: 'run_script(print(1)) through MCP',
        run: async () => {
          const reply = await runScriptTool(client, 'print(1)');
          if (reply.isError || reply.output !== '1') throw new Error(`run_script failed: ${reply.text}`);
        },
      },
      { key: 'bare', label: `bare \`${exe} -c 'print(1)'\``, run: () => spawnAndWait(exe, ['-c', 'print(1)'], '1\n') },
      {
        key: 'shim',
        label: 'bare `python3` (pyenv shim, for reference)',
        run: () => spawnAndWait('python3', ['-c', 'print(1)'], '1\n'),
      },
      {
        key: 'mcpRead',
        label: 'MCP round trip: read_workspace_file (small file)',
        run: async () => {
          const result = await client.callTool({ name: 'read_workspace_file', arguments: { path: 'small.txt' } });
          if (!textOf(result).startsWith('hello')) throw new Error(`read_workspace_file: ${textOf(result)}`);
        },
      },
      {
        key: 'runner',
        label: 'runScript(print(1)) alone: sandbox + bootstrap + bridge + records',
        run: async () => {
          scriptId += 1;
          const outcome = await runScript({
            code: 'print(1)',
            scriptId: `bench${scriptId}`,
            workspaceDir: fixture.workspaceDir,
            readOnly: false,
            runtimeDir: fixture.runtimeDir,
            python,
            uids: fixture.uids,
            limits: LIMITS,
            callTool: () => Promise.reject(new Error('no calls in this benchmark')),
          });
          if (outcome.status !== 'ok' || outcome.outputHead !== '1\n') throw new Error(`runScript: ${outcome.status}`);
        },
      },
      {
        key: 'sandboxPython',
        label: 'runSandboxed: python (gateway flags) -c print(1)',
        run: () => sandboxed(fixture, [exe, ...GATEWAY_FLAGS, '-c', 'print(1)'], '1\n'),
      },
      {
        key: 'sandboxNoSite',
        label: 'runSandboxed: python (gateway flags) -S -c print(1)',
        run: () => sandboxed(fixture, [exe, ...GATEWAY_FLAGS, '-S', '-c', 'print(1)'], '1\n'),
      },
      {
        key: 'sandboxTrue',
        label: 'runSandboxed: /bin/true (bwrap + setpriv + prlimit)',
        run: () => sandboxed(fixture, ['/bin/true'], ''),
      },
      {
        key: 'bwrapOnly',
        label: 'bwrap alone: /bin/true with the same mounts, no setpriv/prlimit',
        run: () => spawnAndWait(bwrap, bwrapOnlyArgv(fixture), ''),
      },
      {
        key: 'pythonFlags',
        label: 'bare python (gateway flags) -c print(1)',
        run: () => spawnAndWait(exe, [...GATEWAY_FLAGS, '-c', 'print(1)'], '1\n'),
      },
      {
        key: 'pythonNoSite',
        label: 'bare python (gateway flags) -S -c print(1)',
        run: () => spawnAndWait(exe, [...GATEWAY_FLAGS, '-S', '-c', 'print(1)'], '1\n'),
      },
      {
        key: 'bootstrap',
        label: 'bare python (gateway flags) running the bootstrap file',
        run: () => bootstrapAlone(exe, fixture.runtimeDir),
      },
      { key: 'mkfifo', label: 'mkfifo process (run once per script for fd 3/4)', run: () => mkfifoOnce(fixture) },
      {
        key: 'uidScan',
        label: 'uid check: scan /proc for the sandbox uid',
        run: () => listUidProcesses(63_999).then(() => undefined),
      },
    ];
    const samples = stages.map(() => [] as number[]);
    // One warm-up round, then rotate the order every repetition so no stage always runs after the same one.
    for (const stage of stages) await timeStage(stage);
    for (let rep = 0; rep < reps; rep++) {
      for (let offset = 0; offset < stages.length; offset++) {
        const index = (rep + offset) % stages.length;
        samples[index]!.push(await timeStage(stages[index]!));
      }
    }
    await client.close();
    return buildSection(stages, samples.map(summarize), reps);
  } finally {
    await gateway.close();
    await fixture.cleanup();
  }
}

function ms(summary: Summary): string {
  return `${formatNumber(summary.p50)} ms (${formatNumber(summary.min)}–${formatNumber(summary.max)})`;
}

function buildSection(stages: Stage[], summaries: Summary[], reps: number): Section {
  const of = (key: string): Summary => {
    const index = stages.findIndex((stage) => stage.key === key);
    if (index === -1) throw new Error(`no stage ${key}`);
    return summaries[index]!;
  };
  const e2e = of('e2e');
  const bare = of('bare');
  const ratio50 = e2e.p50 / bare.p50;
  const ratio95 = e2e.p95 / bare.p95;
  const pythonStart = of('pythonFlags').p50;
  const sandboxCost = of('sandboxPython').p50 - pythonStart;
  const runnerCost = of('runner').p50 - of('sandboxPython').p50;
  const mcpCost = e2e.p50 - of('runner').p50;
  const rows: Row[] = [
    {
      figure: 'p50, run_script vs bare python',
      toolgate: `${formatNumber(e2e.p50)} ms`,
      baseline: `${formatNumber(bare.p50)} ms`,
      ratio: formatRatio(ratio50),
      goal: '≤ 1.25×',
      met: ratio50 <= 1.25,
    },
    {
      figure: 'p95, run_script vs bare python',
      toolgate: `${formatNumber(e2e.p95)} ms`,
      baseline: `${formatNumber(bare.p95)} ms`,
      ratio: formatRatio(ratio95),
      goal: '≤ 1.25×',
      met: ratio95 <= 1.25,
    },
    {
      figure: 'p50, bare python vs the pyenv shim',
      toolgate: `${formatNumber(bare.p50)} ms`,
      baseline: `${formatNumber(of('shim').p50)} ms`,
      ratio: formatRatio(bare.p50 / of('shim').p50),
      goal: '',
    },
    ...stages
      .filter((stage) => !['e2e', 'bare', 'shim'].includes(stage.key))
      .map((stage) => ({
        figure: `stage: ${stage.label}`,
        toolgate: ms(of(stage.key)),
        baseline: '',
        ratio: '',
        goal: '',
      })),
  ];
  return {
    name: 'start',
    title: '2. Sandbox start: run_script(print(1)) end to end through MCP vs bare Python',
    rows,
    notes: [
      `${reps} repetitions after one warm-up, every stage interleaved in a rotating order; stage rows are p50 (min–max).`,
      `Where the p50 goes: Python with the gateway's flags ${formatNumber(pythonStart)} ms (\`site\` ≈ ${formatNumber(pythonStart - of('pythonNoSite').p50)} ms of it); sandbox ≈ ${formatNumber(sandboxCost)} ms (bwrap alone ${formatNumber(of('bwrapOnly').p50)} ms, setpriv + prlimit ≈ ${formatNumber(of('sandboxTrue').p50 - of('bwrapOnly').p50)} ms); bootstrap + bridge + records + mkfifo + uid check ≈ ${formatNumber(runnerCost)} ms; MCP + gateway tool path ≈ ${formatNumber(mcpCost)} ms.`,
      `Sandboxed with \`-S\`: ${formatNumber(of('sandboxNoSite').p50)} ms against ${formatNumber(of('sandboxPython').p50)} ms with site (what \`site\` does here depends on the .pth files of the interpreter's site-packages).`,
    ],
  };
}

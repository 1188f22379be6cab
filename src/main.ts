#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { runApprovalsCommand } from './cli/approvals-command.js';
import { formatAuditRows } from './cli/audit-command.js';
import { runScriptFile } from './cli/run-command.js';
import { runBackgroundCommand } from './cli/background-command.js';
import { parseSince, resolveCliContext } from './cli/cli-context.js';
import { runDoctor } from './cli/doctor-command.js';
import { startServer } from './cli/serve-command.js';
import { runStdio } from './cli/stdio-command.js';
import { buildToolsReport, formatToolsReport } from './cli/tools-command.js';
import { isGatewayError } from './errors/gateway-error.js';
import { createLogger } from './log/logger.js';
import { openSqliteStore } from './store/store.js';
import { ServiceRegistry } from './upstream/service-registry.js';
import { createEventBus } from './events/event-bus.js';
import { version } from './gateway.js';
import { join } from 'node:path';

const usage = `toolgate ${version} — an MCP gateway with run_script

usage: toolgate <command> [options]

  serve                          run the gateway (MCP at /mcp, /health)
  stdio --profile P              serve one MCP client over stdio
  tools [--profile P] [--json]   list the tool catalogue with classes and reasons
  run SCRIPT.py [--profile P] [--tools a,b]
                                 run a script like run_script does, with a progress bar on stderr
  audit [--session S] [--tool T] [--since D] [--limit N] [--json]
                                 show gateway_call audit records (D: ISO date or 30m, 12h, 7d)
  approvals [--all] [--json]     list pending approvals (--all: decided ones too)
  approve ID [--session]         allow once (--session: allow this tool for the rest of the session)
  deny ID                        deny
  background [--session S] [--json]
                                 list background calls
  cancel ID                      cancel a running background call (asks the running gateway)
  doctor                         check Node, Python, bubblewrap, the config and each service

common options: --config FILE (default ./toolgate.json, else the demo), --data-dir DIR (default ./data)`;

async function main(argv: string[]): Promise<number> {
  const [command, ...given] = argv;
  // `approve ID --session` is a flag, while `audit --session S` takes a value.
  const forSession = command === 'approve' && given.includes('--session');
  const rest = command === 'approve' ? given.filter((arg) => arg !== '--session') : given;
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      config: { type: 'string' },
      'data-dir': { type: 'string' },
      profile: { type: 'string' },
      json: { type: 'boolean', default: false },
      session: { type: 'string' },
      tool: { type: 'string' },
      since: { type: 'string' },
      limit: { type: 'string' },
      all: { type: 'boolean', default: false },
      tools: { type: 'string' },
    },
    allowPositionals: true,
  });
  const out = (line: string): void => void process.stdout.write(line + '\n');
  const logger = createLogger();
  const context = () =>
    resolveCliContext({ config: values.config, dataDir: values['data-dir'] }, process.env, process.cwd());

  switch (command) {
    case 'serve': {
      const running = await startServer(context(), logger, out);
      const stop = (): void => {
        logger.info('shutting down');
        void running.close().then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      return new Promise<number>(() => undefined);
    }
    case 'stdio': {
      if (values.profile === undefined) throw new Error('stdio needs --profile NAME');
      const close = await runStdio(context(), values.profile, logger);
      process.stdin.once('end', () => void close().then(() => process.exit(0)));
      return new Promise<number>(() => undefined);
    }
    case 'run':
      return runScriptFile(
        context(),
        {
          file: positionals[0],
          profile: values.profile,
          tools: (values.tools ?? '')
            .split(',')
            .map((tool) => tool.trim())
            .filter((tool) => tool !== ''),
        },
        createLogger({ level: 'warn' }),
        out,
      );
    case 'tools': {
      const ctx = context();
      const registry = new ServiceRegistry(ctx.config, {
        logger: createLogger({ level: 'error' }),
        events: createEventBus(),
        environment: process.env,
        version,
      });
      await registry.start();
      const report = buildToolsReport(ctx.config, registry.catalogue(), registry.serviceStates(), values.profile);
      await registry.close();
      out(values.json ? JSON.stringify(report, null, 2) : formatToolsReport(report));
      return 0;
    }
    case 'audit': {
      const ctx = context();
      const store = openSqliteStore(join(ctx.dataDir, 'toolgate.db'));
      const page = await store.queryCalls({
        ...(values.session === undefined ? {} : { sessionId: values.session }),
        ...(values.tool === undefined ? {} : { tool: values.tool }),
        ...(values.since === undefined ? {} : { since: parseSince(values.since, Date.now()) }),
        limit: values.limit === undefined ? 50 : Number(values.limit),
      });
      await store.close();
      out(values.json ? JSON.stringify(page.rows, null, 2) : formatAuditRows(page.rows));
      return 0;
    }
    case 'approvals':
    case 'approve':
    case 'deny':
      return runApprovalsCommand(
        context(),
        command,
        { id: positionals[0], session: forSession, all: values.all, json: values.json },
        out,
      );
    case 'background':
    case 'cancel':
      return runBackgroundCommand(
        context(),
        command,
        { id: positionals[0], session: values.session, json: values.json },
        out,
      );
    case 'doctor':
      return runDoctor(() => context(), out);
    case undefined:
    case 'help':
    case '--help':
      out(usage);
      return command === undefined ? 1 : 0;
    default:
      process.stderr.write(`unknown command "${command}"\n\n${usage}\n`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `toolgate: ${isGatewayError(error) || error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(isGatewayError(error) && error.code === 'config_invalid' ? 78 : 1);
  },
);

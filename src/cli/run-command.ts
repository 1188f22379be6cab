import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { GatewayError } from '../errors/gateway-error.js';
import { createGateway } from '../gateway.js';
import type { Logger } from '../log/logger.js';
import type { ApprovalChannelHint } from '../pipeline/ports.js';
import type { CliContext } from './cli-context.js';

/** One line redrawn on stderr: a bar when the script gave a total, else the counts. */
export function formatProgressLine(
  progress: { progress: number; total?: number; message?: string },
  elapsedMs: number,
): string {
  const seconds = (elapsedMs / 1000).toFixed(1);
  if (progress.total === undefined || progress.total <= 0) return `${progress.message ?? ''} · ${seconds} s`;
  const ratio = Math.min(1, progress.progress / progress.total);
  const filled = Math.round(ratio * 30);
  return `[${'#'.repeat(filled)}${'-'.repeat(30 - filled)}] ${Math.round(ratio * 100)}% · ${progress.message ?? ''} · ${seconds} s`;
}

/** At a terminal the person running the command answers the approval; elsewhere it waits for API or CLI. */
function terminalApproval(): ApprovalChannelHint {
  if (process.stdin.isTTY !== true) return {};
  return {
    elicit: async (message, options) => {
      const prompt = createInterface({ input: process.stdin, output: process.stderr });
      try {
        const answer = await prompt.question(`${message}\nallow once? [y/N] `);
        return answer.trim().toLowerCase().startsWith('y') && options.includes('allow_once')
          ? 'allow_once'
          : 'declined';
      } finally {
        prompt.close();
      }
    },
  };
}

/** `toolgate run SCRIPT.py`: the same path as run_script over MCP, with a progress bar; prints what the model gets. */
export async function runScriptFile(
  context: CliContext,
  options: { file: string | undefined; profile: string | undefined; tools: string[] },
  logger: Logger,
  out: (line: string) => void,
): Promise<number> {
  if (options.file === undefined) throw new Error('run needs a script file: toolgate run SCRIPT.py');
  const code = readFileSync(options.file, 'utf8');
  const profileName = options.profile ?? Object.keys(context.config.profiles)[0];
  const profile = profileName === undefined ? undefined : context.config.profiles[profileName];
  if (profileName === undefined || profile === undefined) {
    throw new GatewayError('config_invalid', `no profile named "${options.profile ?? ''}"`);
  }
  // A terminal waits for its script: nothing moves to the background here.
  const settings = context.config.settings;
  const config = {
    ...context.config,
    settings: { ...settings, backgroundCalls: { autoAfterSec: settings.scripts.timeoutSec + 60 } },
  };
  const gateway = await createGateway({ ...context, config, logger });
  const controller = new AbortController();
  const onInterrupt = (): void => controller.abort();
  process.once('SIGINT', onInterrupt);
  try {
    await gateway.registry.start();
    const caller = { profileName, profile, sessionId: `${profileName}/cli-run-${process.pid}-${Date.now()}` };
    const tool = gateway.builtins(caller).find((builtin) => builtin.definition.name === 'run_script');
    if (tool === undefined)
      throw new GatewayError('not_offered', `profile ${profileName} has no third-party tools, so no run_script`);
    const startedAt = Date.now();
    const draw = process.stderr.isTTY === true;
    const result = await tool.call(
      { code, tools: options.tools, description: `toolgate run ${options.file}` },
      {
        signal: controller.signal,
        approvalChannel: terminalApproval(),
        onProgress: (progress) => {
          const line = formatProgressLine(progress, Date.now() - startedAt);
          process.stderr.write(draw ? `\r\x1b[2K${line}` : `${line}\n`);
        },
      },
    );
    if (draw) process.stderr.write('\r\x1b[2K');
    out(result.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n'));
    return result.isError === true ? 1 : 0;
  } finally {
    process.off('SIGINT', onInterrupt);
    await gateway.close();
  }
}

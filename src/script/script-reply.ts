import type { ScriptOutcome } from './script-runner.js';

/** How much of stderr a failed run shows (the end of a traceback). */
export const STDERR_REPLY_CHARS = 2000;

export interface ScriptReplySummary {
  status: ScriptOutcome['status'];
  calls: number;
  failures: number;
  callsPerTool: Record<string, number>;
  durationMs: number;
  exitCode: number | null;
  detailsDir: string;
  outputFile: string;
  outputChars: number;
  outputTruncated: boolean;
  killedReason?: string;
}

/** The run_script tool result, in MCP's CallToolResult shape. */
export interface ScriptReply {
  content: [{ type: 'text'; text: string }];
  isError: boolean;
  structuredContent: ScriptReplySummary;
}

function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}

/** The tail of a text, cut at a line start when one is near, so a traceback starts cleanly. */
function lastPart(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(text.length - max);
  const newline = cut.indexOf('\n');
  return newline >= 0 && newline < max / 4 ? cut.slice(newline + 1) : cut;
}

/**
 * The reply to the model (PRODUCT.md §4): a summary line, what the script printed (cut, with the
 * path of the full output), and on error the end of stderr.
 */
export function buildScriptReply(outcome: ScriptOutcome): ScriptReply {
  const seconds = (outcome.durationMs / 1000).toFixed(1);
  const outputFile = `${outcome.detailsDir}output.txt`;
  const lines = [
    `run_script ${outcome.status} · ${formatCount(outcome.calls)} calls (${formatCount(outcome.failures)} failed) · ${seconds} s · details: ${outcome.detailsDir}`,
  ];
  if (outcome.killedReason) lines.push(`(ended by the gateway: ${outcome.killedReason})`);
  if (outcome.outputChars === 0) {
    lines.push('(the script printed nothing)');
  } else {
    lines.push(outcome.outputHead.replace(/\n$/, ''));
    if (outcome.outputTruncated) {
      lines.push(
        `[output cut at ${formatCount([...outcome.outputHead].length)} of ${formatCount(outcome.outputChars)} characters; full output: ${outputFile}]`,
      );
    }
  }
  const stderr = outcome.stderrTail.trim();
  if (outcome.status !== 'ok' && stderr !== '') {
    lines.push('--- stderr (end) ---', lastPart(stderr, STDERR_REPLY_CHARS));
  }
  const structuredContent: ScriptReplySummary = {
    status: outcome.status,
    calls: outcome.calls,
    failures: outcome.failures,
    callsPerTool: outcome.callsPerTool,
    durationMs: outcome.durationMs,
    exitCode: outcome.exitCode,
    detailsDir: outcome.detailsDir,
    outputFile,
    outputChars: outcome.outputChars,
    outputTruncated: outcome.outputTruncated,
    ...(outcome.killedReason === undefined ? {} : { killedReason: outcome.killedReason }),
  };
  return { content: [{ type: 'text', text: lines.join('\n') }], isError: outcome.status !== 'ok', structuredContent };
}
